package sizer_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
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
// and an infeasible resize (or one past its deadline) makes it fall back to the template, with an event.
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

	// The kubelet gives up: nothing but the sizer's own polling can notice (pod status is not watched).
	s.setResizeCondition(pod, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity", LastTransitionTime: metav1.Now()})
	s.g.Eventually(s.condition("grow", sizerv1alpha1.ConditionSized), 3*resizeRecheck, poll).Should(Equal("False/" + sizerv1alpha1.ReasonInPlaceFallback))
	s.g.Expect(conditionMessage(s.get("grow"), sizerv1alpha1.ConditionSized)).To(ContainSubstring("enough capacity"))
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
