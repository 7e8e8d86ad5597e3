//go:build integration

package sizer_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/sizer"
)

// setResizeCondition writes a resize condition into a pod's status, as the kubelet would.
func (s *scenario) setResizeCondition(pod *corev1.Pod, c corev1.PodCondition) {
	s.g.Eventually(func() error {
		var p corev1.Pod
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		p.Status.Conditions = []corev1.PodCondition{c}
		return env.Client.Status().Update(s.ctx, &p)
	}, timeout, poll).Should(Succeed())
}

// InPlace converges without a pod watch on status: while a resize is under way the sizer looks again on its own,
// and a resize the kubelet reports failed (reason Error) makes it fall back to the template at once.
func TestInPlaceFollowsResizesToTheEnd(t *testing.T) {
	s := newScenario(t)
	startController(t)
	app := corev1.Container{Name: "app", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")}}
	d := s.deployment("grow", "user", ptr.To[int32](1), app)
	pod := s.pod("grow-1", d.Spec.Template.Labels, app)
	// The kubelet has started resizing: the sizer reports it and keeps looking.
	s.setResizeCondition(pod, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now()})
	s.sizer("grow", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("grow"), UpdateMode: sizerv1alpha1.UpdateModeInPlace,
		ForceOwnership: true, Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "150m"),
			Limits: rl("cpu", "300m"), ControlledValues: sizerv1alpha1.RequestsAndLimits}}})
	s.g.Eventually(s.condition("grow", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonResizing))

	// The kubelet fails the resize: nothing but the sizer's own polling can notice (pod status is not watched), and
	// it falls back at once, not at the in-progress deadline.
	s.setResizeCondition(pod, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonError, Message: "failed to update the container's cgroup", LastTransitionTime: metav1.Now()})
	s.g.Eventually(s.condition("grow", sizerv1alpha1.ConditionSized), 3*resizeRecheck, poll).Should(Equal("False/" + sizerv1alpha1.ReasonInPlaceFallback))
	s.g.Expect(conditionMessage(s.get("grow"), sizerv1alpha1.ConditionSized)).To(ContainSubstring("cgroup"))
	s.g.Eventually(func() string {
		return s.getDeployment("grow").Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String()
	}, timeout, poll).Should(Equal("300m"), "the fallback writes the template")
}

// A resize the kubelet has deferred for longer than the deadline falls back too.
func TestInPlaceDeferredPastItsDeadlineFallsBack(t *testing.T) {
	s := newScenario(t)
	startController(t)
	app := corev1.Container{Name: "app", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m"), Limits: rl("cpu", "200m")}}
	d := s.deployment("wait", "user", ptr.To[int32](1), app)
	pod := s.pod("wait-1", d.Spec.Template.Labels, app)
	s.setResizeCondition(pod, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonDeferred, LastTransitionTime: metav1.NewTime(time.Now().Add(-6 * time.Minute))})
	s.sizer("wait", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("wait"), UpdateMode: sizerv1alpha1.UpdateModeInPlace,
		ForceOwnership: true, Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Limits: rl("cpu", "400m"),
			ControlledValues: sizerv1alpha1.RequestsAndLimits}}})
	s.g.Eventually(s.condition("wait", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonInPlaceFallback))
	s.g.Expect(conditionMessage(s.get("wait"), sizerv1alpha1.ConditionSized)).To(ContainSubstring("past its 5m0s deadline"))
}

// resizeRecheck bounds how long the sizer takes to look at a pod with a resize under way.
const resizeRecheck = 6 * time.Second

// servingPod creates a Ready pod of d whose kubelet runs its containers with the resources they ask for (what a
// resize changes, until the kubelet applies it).
func (s *scenario) servingPod(name string, d *appsv1.Deployment) *corev1.Pod {
	pod := s.pod(name, d.Spec.Template.Labels, d.Spec.Template.Spec.Containers...)
	s.markServing(pod)
	return pod
}

// markServing makes a pod Ready, its containers running with the resources its spec asks for now: a resize done.
func (s *scenario) markServing(pod *corev1.Pod) {
	s.g.Eventually(func() error {
		var p corev1.Pod
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true,
				Image: c.Image, Resources: c.Resources.DeepCopy(), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
		}
		return env.Client.Status().Update(s.ctx, &p)
	}, timeout, poll).Should(Succeed())
}

// memoryLimits lists the memory limit of each of the pods' first container, by pod name.
func (s *scenario) memoryLimits(names ...string) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for _, n := range names {
			var p corev1.Pod
			if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: n}, &p); err != nil {
				out[n] = "gone"
				continue
			}
			out[n] = p.Spec.Containers[0].Resources.Limits.Memory().String()
		}
		return out
	}
}

// restartingApp is a container whose memory resize restarts it.
func restartingApp() corev1.Container {
	return corev1.Container{Name: "app", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "100m", "memory", "64Mi")},
		ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}}
}

// growMemory is a sizer that raises app's memory in place to 96Mi.
func growMemory(name string) sizerv1alpha1.WorkloadSizerSpec {
	return sizerv1alpha1.WorkloadSizerSpec{TargetRef: target(name), UpdateMode: sizerv1alpha1.UpdateModeInPlace,
		ForceOwnership: true, Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app",
			Requests: rl("memory", "96Mi"), Limits: rl("memory", "96Mi"), ControlledValues: sizerv1alpha1.RequestsAndLimits}}}
}

// A resize that restarts a container (resizePolicy RestartContainer) takes the pod out of its Services for the
// restart: the sizer resizes the healthy pods within the workload's budget (here maxUnavailable 1), one after the
// other as each comes back, never all three at once.
func TestInPlaceRestartsStayWithinTheDisruptionBudget(t *testing.T) {
	s := newScenario(t)
	startController(t)
	d := s.deployment("web", "user", ptr.To[int32](3), restartingApp())
	s.setMaxUnavailable(d, 1)
	pods := []string{"web-a", "web-b", "web-c"}
	for _, n := range pods {
		s.servingPod(n, d)
	}
	s.sizer("web", growMemory("web"))
	resized := func(m map[string]string) int {
		n := 0
		for _, v := range m {
			if v == "96Mi" {
				n++
			}
		}
		return n
	}
	for want := 1; want <= 3; want++ {
		s.g.Eventually(func() int { return resized(s.memoryLimits(pods...)()) }, timeout, poll).Should(Equal(want),
			func() string { return conditionMessage(s.get("web"), sizerv1alpha1.ConditionSized) })
		if want < 3 {
			s.g.Eventually(s.condition("web", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonResizing))
			s.g.Expect(conditionMessage(s.get("web"), sizerv1alpha1.ConditionSized)).To(ContainSubstring("wait for the disruption budget"))
			// While that pod restarts, no other is resized: the budget is spent.
			s.g.Consistently(func() int { return resized(s.memoryLimits(pods...)()) }, resizeRecheck, poll).Should(Equal(want))
		}
		// The kubelet has applied the resize and the pod is back.
		for n, v := range s.memoryLimits(pods...)() {
			if v == "96Mi" {
				s.markServing(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: s.ns}})
			}
		}
	}
	s.g.Eventually(s.condition("web", sizerv1alpha1.ConditionSized), 3*resizeRecheck, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
	s.g.Expect(s.getDeployment("web").Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("64Mi"),
		"the template was rolled")
}

// A PodDisruptionBudget that allows no disruption now holds restarting resizes of serving pods back (the sizer
// waits), while a pod that serves nothing is resized at no cost; a workload that allows no pod down by its own
// strategy, with no budget, is resized through its template instead.
func TestInPlaceRestartsWaitForABudgetOrGoThroughTheTemplate(t *testing.T) {
	s := newScenario(t)
	startController(t)
	d := s.deployment("held", "user", ptr.To[int32](3), restartingApp())
	s.servingPod("held-a", d)
	s.servingPod("held-b", d)
	s.pod("held-c", d.Spec.Template.Labels, d.Spec.Template.Spec.Containers...) // not ready
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: s.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: d.Spec.Selector}}
	s.g.Expect(env.Client.Create(s.ctx, pdb)).To(Succeed())
	s.sizer("held", growMemory("held"))
	s.g.Eventually(func() string { return conditionMessage(s.get("held"), sizerv1alpha1.ConditionSized) }, timeout, poll).
		Should(ContainSubstring("2 wait for the disruption budget"))
	s.g.Consistently(s.memoryLimits("held-a", "held-b", "held-c"), resizeRecheck, poll).
		Should(Equal(map[string]string{"held-a": "64Mi", "held-b": "64Mi", "held-c": "96Mi"}),
			"a serving pod was restarted against the budget, or the pod that serves nothing was not resized")

	// maxUnavailable 0 (the Deployment surges instead) and no budget: through the template.
	d2 := s.deployment("surge", "user", ptr.To[int32](2), restartingApp())
	s.setMaxUnavailable(d2, 0)
	s.servingPod("surge-a", d2)
	s.sizer("surge", growMemory("surge"))
	s.g.Eventually(s.condition("surge", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonInPlaceFallback))
	s.g.Expect(conditionMessage(s.get("surge"), sizerv1alpha1.ConditionSized)).To(And(ContainSubstring("RestartContainer"),
		ContainSubstring("allows no pod down")))
	s.g.Eventually(func() string {
		return s.getDeployment("surge").Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()
	}, timeout, poll).Should(Equal("96Mi"))
	s.g.Expect(s.memoryLimits("surge-a")()).To(Equal(map[string]string{"surge-a": "64Mi"}), "the pod was restarted in place")
}

// A pod whose resize cannot fit its node is evicted alone (within the budget: maxUnavailable 1), with an event: the
// other pods are resized in place and the template is not rolled.
func TestAnInfeasibleResizeEvictsThatPodOnly(t *testing.T) {
	s := newScenario(t)
	startController(t)
	app := corev1.Container{Name: "app", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "100m", "memory", "64Mi")}}
	d := s.deployment("tight", "user", ptr.To[int32](2), app)
	s.setMaxUnavailable(d, 1)
	s.servingPod("tight-a", d)
	b := s.servingPod("tight-b", d)
	s.sizer("tight", growMemory("tight"))
	s.g.Eventually(s.memoryLimits("tight-a", "tight-b"), timeout, poll).
		Should(Equal(map[string]string{"tight-a": "96Mi", "tight-b": "96Mi"}), "a resize that restarts nothing is done on every pod")
	s.markServing(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tight-a", Namespace: s.ns}})
	var live corev1.Pod
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(b), &live)).To(Succeed())
	live.Status.Conditions = append(live.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending,
		Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory",
		LastTransitionTime: metav1.Now()})
	s.g.Expect(env.Client.Status().Update(s.ctx, &live)).To(Succeed())

	s.g.Eventually(s.memoryLimits("tight-b"), 3*resizeRecheck, poll).Should(Equal(map[string]string{"tight-b": "gone"}))
	s.g.Expect(s.memoryLimits("tight-a")()).To(Equal(map[string]string{"tight-a": "96Mi"}))
	s.g.Eventually(func() []string { return s.events("tight") }, timeout, poll).Should(ContainElement(ContainSubstring(sizer.EventInfeasiblePodEvicted)))
	s.g.Eventually(s.condition("tight", sizerv1alpha1.ConditionSized), 3*resizeRecheck, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
	s.g.Expect(s.getDeployment("tight").Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("64Mi"),
		"one infeasible pod rolled the whole template")
}

// setMaxUnavailable gives d's rolling update maxUnavailable n (and maxSurge 1, so that 0 is valid).
func (s *scenario) setMaxUnavailable(d *appsv1.Deployment, n int) {
	patch := fmt.Sprintf(`{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":%d,"maxSurge":1}}}}`, n)
	s.g.Expect(env.Client.Patch(s.ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
