//go:build integration

package sizer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/sizer"
)

// managersOf lists the field managers of an object's managedFields.
func managersOf(obj client.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		out = append(out, m.Manager)
	}
	return out
}

// ownedBySizers reports whether any sizer field manager has an entry on obj.
func ownedBySizers(obj client.Object) bool {
	for _, m := range managersOf(obj) {
		if strings.HasPrefix(m, sizer.FieldOwner) {
			return true
		}
	}
	return false
}

// A user's own PodDisruptionBudget, Service and Ingress named like the target are never rewritten, never get the
// sizer's owner reference and survive the sizer's deletion unchanged; the sizer reports each, by name.
func TestUsersObjectsNamedLikeTheTargetAreLeftAlone(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("web", "user", ptr.To[int32](3), corev1.Container{Name: "app", Image: "web:v1"})
	// The user's own objects, named like the target. The budget selects other pods, so only its name is in the way.
	userPDB := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}}}
	userSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "web", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
	userIng := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web", Port: networkingv1.ServiceBackendPort{Number: 8080}}}}}
	for _, o := range []client.Object{userPDB, userSvc, userIng} {
		s.g.Expect(env.Client.Create(s.ctx, o, client.FieldOwner("user"))).To(Succeed())
	}
	snapshot := func() (policyv1.PodDisruptionBudgetSpec, corev1.ServiceSpec, networkingv1.IngressSpec) {
		var p policyv1.PodDisruptionBudget
		var sv corev1.Service
		var in networkingv1.Ingress
		key := client.ObjectKey{Namespace: s.ns, Name: "web"}
		s.g.Expect(env.Client.Get(s.ctx, key, &p)).To(Succeed())
		s.g.Expect(env.Client.Get(s.ctx, key, &sv)).To(Succeed())
		s.g.Expect(env.Client.Get(s.ctx, key, &in)).To(Succeed())
		for _, o := range []client.Object{&p, &sv, &in} {
			s.g.Expect(o.GetOwnerReferences()).To(BeEmpty(), "%T got an owner reference", o)
			s.g.Expect(ownedBySizers(o)).To(BeFalse(), "%T was written by the sizer: %v", o, managersOf(o))
		}
		return p.Spec, sv.Spec, in.Spec
	}
	pdb0, svc0, ing0 := snapshot()

	s.sizer("web", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("web"), Size: ptr.To[int32](3), ForceOwnership: true,
		Disruption: &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileQuorum},
		Expose: &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 80, Type: corev1.ServiceTypeClusterIP},
			Ingress: &sizerv1alpha1.IngressExpose{Enabled: true, Path: "/"}}})
	s.g.Eventually(s.condition("web", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonObjectNotOwned))
	msg := conditionMessage(s.get("web"), sizerv1alpha1.ConditionConflict)
	for _, want := range []string{"PodDisruptionBudget web", "Service web", "Ingress web"} {
		s.g.Expect(msg).To(ContainSubstring(want))
	}
	s.g.Expect(s.condition("web", sizerv1alpha1.ConditionReady)()).To(Equal("False/"+sizerv1alpha1.ReasonObjectNotOwned),
		"Ready shows the conflict (kubectl get wls shows Ready's reason)")
	s.g.Consistently(func() bool {
		p, sv, in := snapshot()
		return equalSpecs(p, pdb0) && equalSpecs(sv, svc0) && equalSpecs(in, ing0)
	}, time.Second, poll).Should(BeTrue(), "the user's objects are unchanged")

	s.g.Expect(env.Client.Delete(s.ctx, s.get("web"))).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "web"}, &sizerv1alpha1.WorkloadSizer{}))
	}, timeout, poll).Should(BeTrue())
	p, sv, in := snapshot()
	s.g.Expect(equalSpecs(p, pdb0) && equalSpecs(sv, svc0) && equalSpecs(in, ing0)).To(BeTrue(), "the user's objects survive the sizer")
}

func equalSpecs(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// A budget of the user's over the target's pods, under any name, keeps the sizer from adding a second one (every
// eviction of a pod under two budgets fails); a budget of the sizer's own is removed when the user's appears.
func TestNoSecondBudgetOverTheSamePods(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("api", "user", ptr.To[int32](4), corev1.Container{Name: "app", Image: "api:v1"})
	s.sizer("api", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("api"), Size: ptr.To[int32](4), ForceOwnership: true,
		Disruption: &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileQuorum}})
	key := client.ObjectKey{Namespace: s.ns, Name: "api"}
	s.g.Eventually(func() error { return env.Client.Get(s.ctx, key, &policyv1.PodDisruptionBudget{}) }, timeout, poll).Should(Succeed())

	mine := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "api-team-budget", Namespace: s.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
	s.g.Expect(env.Client.Create(s.ctx, mine)).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, key, &policyv1.PodDisruptionBudget{}))
	}, timeout, poll).Should(BeTrue(), "the sizer's own budget goes once the user's covers the pods")
	s.g.Eventually(s.condition("api", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonBudgetOverlap))
	s.g.Expect(conditionMessage(s.get("api"), sizerv1alpha1.ConditionConflict)).To(ContainSubstring("api-team-budget"))
	s.g.Consistently(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, key, &policyv1.PodDisruptionBudget{}))
	}, time.Second, poll).Should(BeTrue(), "no second budget")
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
	s.g.Expect(mine.Spec.MinAvailable.IntValue()).To(Equal(3))
	s.g.Expect(mine.OwnerReferences).To(BeEmpty())

	// The user's budget goes: the sizer's comes back.
	s.g.Expect(env.Client.Delete(s.ctx, mine)).To(Succeed())
	s.g.Eventually(func() error { return env.Client.Get(s.ctx, key, &policyv1.PodDisruptionBudget{}) }, timeout, poll).Should(Succeed())
	s.g.Eventually(s.condition("api", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
}

// The simplest form: a sizer with an image and no targetRef never takes over a user's Deployment of its name.
func TestAUsersDeploymentIsNeverCreatedOver(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("solo", "user", ptr.To[int32](2), corev1.Container{Name: "main", Image: "user:v1"})
	s.sizer("solo", sizerv1alpha1.WorkloadSizerSpec{Image: "nginx", Size: ptr.To[int32](2)})
	s.g.Eventually(s.condition("solo", sizerv1alpha1.ConditionTargetFound), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonFound))
	d := s.getDeployment("solo")
	s.g.Expect(d.OwnerReferences).To(BeEmpty())
	s.g.Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
	s.g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("user:v1"))
}

// The simplest form creates and keeps a Deployment named like the sizer.
func TestNoTargetRefSizesTheDeploymentNamedLikeTheSizer(t *testing.T) {
	s := newScenario(t)
	startController(t)
	w := s.sizer("hello", sizerv1alpha1.WorkloadSizerSpec{Image: "nginx:1.27", Size: ptr.To[int32](2)})
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "hello"}, &appsv1.Deployment{})
	}, timeout, poll).Should(Succeed())
	d := s.getDeployment("hello")
	s.g.Expect(metav1.IsControlledBy(d, w)).To(BeTrue())
	s.g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
}

// Unsetting spec.size hands replicas over with their current value: a resources change afterwards (an apply
// without replicas) must not reset them to the default of one.
func TestUnsettingSizeKeepsReplicas(t *testing.T) {
	for _, created := range []bool{false, true} {
		name := map[bool]string{false: "referenced", true: "created"}[created]
		t.Run(name, func(t *testing.T) {
			s := newScenario(t)
			startController(t)
			spec := sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("hpa"), Size: ptr.To[int32](4), ForceOwnership: true,
				Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "*", Requests: rl("cpu", "100m")}}}
			if created {
				spec.Image = "nginx"
			} else {
				s.deployment("hpa", "user", nil, corev1.Container{Name: "app", Image: "x"})
			}
			s.sizer("hpa", spec)
			s.g.Eventually(func() int32 {
				var d appsv1.Deployment
				if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "hpa"}, &d); err != nil {
					return 0
				}
				return ptr.Deref(d.Spec.Replicas, 0)
			}, timeout, poll).Should(Equal(int32(4)))
			s.g.Eventually(s.condition("hpa", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))

			s.update("hpa", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = nil })
			s.g.Eventually(func() int64 { return s.get("hpa").Status.ObservedGeneration }, timeout, poll).Should(Equal(s.get("hpa").Generation))
			s.update("hpa", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Resources[0].Requests = rl("cpu", "200m") })
			s.g.Eventually(func() string {
				return s.getDeployment("hpa").Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
			}, timeout, poll).Should(Equal("200m"))
			s.g.Consistently(func() int32 { return ptr.Deref(s.getDeployment("hpa").Spec.Replicas, 0) }, time.Second, poll).
				Should(Equal(int32(4)), "replicas keep their value once the sizer lets them go")

			// Someone else (an HPA through /scale, kubectl scale) now moves replicas; the sizer leaves them be.
			d := s.getDeployment("hpa")
			d.Spec.Replicas = ptr.To[int32](6)
			s.g.Expect(env.Client.Update(s.ctx, d, client.FieldOwner("horizontal-pod-autoscaler"))).To(Succeed())
			s.update("hpa", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Resources[0].Requests = rl("cpu", "300m") })
			s.g.Eventually(func() string {
				return s.getDeployment("hpa").Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
			}, timeout, poll).Should(Equal("300m"))
			s.g.Expect(ptr.Deref(s.getDeployment("hpa").Spec.Replicas, 0)).To(Equal(int32(6)))
		})
	}
}

// Switching updateMode from Rolling to Off or InPlace hands the resources the sizer wrote over with their values;
// the runtime variables it derived from them leave (one roll when there were any), since nothing keeps them true.
func TestLeavingRollingModeKeepsTheTemplate(t *testing.T) {
	for _, mode := range []sizerv1alpha1.UpdateMode{sizerv1alpha1.UpdateModeOff, sizerv1alpha1.UpdateModeInPlace} {
		t.Run(string(mode), func(t *testing.T) {
			s := newScenario(t)
			startController(t)
			s.deployment("svc", "user", ptr.To[int32](2), corev1.Container{Name: "app", Image: "x"})
			s.sizer("svc", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("svc"), ForceOwnership: true,
				Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "250m"),
					Limits: rl("cpu", "1", "memory", "512Mi"), ControlledValues: sizerv1alpha1.RequestsAndLimits}},
				Runtime: &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](10)}})
			s.g.Eventually(s.condition("svc", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
			before := s.getDeployment("svc").Spec.Template
			s.g.Expect(before.Spec.Containers[0].Env).NotTo(BeEmpty())

			s.update("svc", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.UpdateMode = mode })
			s.g.Eventually(func() int64 { return s.get("svc").Status.ObservedGeneration }, timeout, poll).Should(Equal(s.get("svc").Generation))
			// The next write to the workload (a new size) carries no template fields any more.
			s.update("svc", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = ptr.To[int32](3) })
			s.g.Eventually(func() int32 { return *s.getDeployment("svc").Spec.Replicas }, timeout, poll).Should(Equal(int32(3)))
			// The template keeps the resources the sizer wrote; the variables it derived from them leave with the
			// derivation (a limit the user changes later would leave them untrue).
			want := before.DeepCopy()
			want.Spec.Containers[0].Env = nil
			s.g.Eventually(func() corev1.PodTemplateSpec { return s.getDeployment("svc").Spec.Template }, timeout, poll).
				Should(Equal(*want), "the template keeps the resources the sizer wrote, without the variables it derived")
			s.g.Consistently(func() corev1.PodTemplateSpec { return s.getDeployment("svc").Spec.Template }, time.Second, poll).
				Should(Equal(*want))
		})
	}
}

// Two sizers on one workload: the second is reported and writes nothing, so they never take turns.
func TestASecondSizerOnTheSameTargetIsReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("shared", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x"})
	s.sizer("first", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("shared"), Size: ptr.To[int32](2), ForceOwnership: true})
	s.g.Eventually(func() int32 { return *s.getDeployment("shared").Spec.Replicas }, timeout, poll).Should(Equal(int32(2)))
	s.g.Eventually(s.condition("first", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))

	// Creation timestamps have a resolution of one second: the second sizer must be younger.
	s.g.Eventually(func() bool { return time.Since(s.get("first").CreationTimestamp.Time) > time.Second }, timeout, poll).Should(BeTrue())
	s.sizer("second", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("shared"), Size: ptr.To[int32](5), ForceOwnership: true})
	s.g.Eventually(s.condition("second", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonAnotherSizer))
	s.g.Expect(conditionMessage(s.get("second"), sizerv1alpha1.ConditionConflict)).To(ContainSubstring("WorkloadSizer first"))
	s.g.Expect(s.condition("second", sizerv1alpha1.ConditionReady)()).To(Equal("False/" + sizerv1alpha1.ReasonAnotherSizer))
	s.g.Consistently(func() int32 { return *s.getDeployment("shared").Spec.Replicas }, time.Second, poll).Should(Equal(int32(2)))
	s.g.Expect(s.condition("first", sizerv1alpha1.ConditionConflict)()).To(Equal("False/" + sizerv1alpha1.ReasonNoConflict))

	// Each sizer writes as its own field manager.
	s.g.Expect(managersOf(s.getDeployment("shared"))).To(ContainElement(sizer.FieldOwner + "/first"))
	s.g.Expect(managersOf(s.getDeployment("shared"))).NotTo(ContainElement(sizer.FieldOwner + "/second"))

	// The second one's deletion releases nothing of the first's.
	s.g.Expect(env.Client.Delete(s.ctx, s.get("second"))).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "second"}, &sizerv1alpha1.WorkloadSizer{}))
	}, timeout, poll).Should(BeTrue())
	s.g.Expect(managersOf(s.getDeployment("shared"))).To(ContainElement(sizer.FieldOwner + "/first"))
}

// An HPA on the workload while spec.size is set: reported by name, replicas left to it; with size unset it is the
// supported setup and no conflict.
func TestAnAutoscalerOnTheWorkloadIsReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("scaled", "user", ptr.To[int32](3), corev1.Container{Name: "app", Image: "x"})
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "scaled-hpa", Namespace: s.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 10,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"}}}
	s.g.Expect(env.Client.Create(s.ctx, hpa)).To(Succeed())
	s.sizer("scaled", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("scaled"), Size: ptr.To[int32](7), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "100m")}}})
	s.g.Eventually(s.condition("scaled", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonAutoscaler))
	s.g.Expect(conditionMessage(s.get("scaled"), sizerv1alpha1.ConditionConflict)).To(ContainSubstring("scaled-hpa"))
	s.g.Eventually(func() string {
		return s.getDeployment("scaled").Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
	}, timeout, poll).Should(Equal("100m"), "the rest is still sized")
	s.g.Consistently(func() int32 { return *s.getDeployment("scaled").Spec.Replicas }, time.Second, poll).Should(Equal(int32(3)))

	s.update("scaled", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = nil })
	s.g.Eventually(s.condition("scaled", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
	s.g.Expect(*s.getDeployment("scaled").Spec.Replicas).To(Equal(int32(3)))
}

// An HPA on the sizer while spec.size is unset reads 0 replicas through the sizer's scale subresource and scales
// nothing: reported by name (it was silent); setting spec.size ends it. Ready, with size unset, waits for the
// workload's own replicas.
func TestAnAutoscalerOnASizerWithoutSizeIsReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("unsized", "user", ptr.To[int32](3), corev1.Container{Name: "app", Image: "x"})
	s.sizer("unsized", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("unsized"), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "100m")}}})
	s.g.Eventually(s.condition("unsized", sizerv1alpha1.ConditionReady), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNotReady))
	s.g.Expect(conditionMessage(s.get("unsized"), sizerv1alpha1.ConditionReady)).To(ContainSubstring("0 of 3 replicas ready"))

	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "sizer-hpa", Namespace: s.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 10,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: sizerv1alpha1.GroupVersion.String(),
				Kind: "WorkloadSizer", Name: "unsized"}}}
	s.g.Expect(env.Client.Create(s.ctx, hpa)).To(Succeed())
	s.g.Eventually(s.condition("unsized", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonAutoscalerWithoutSize))
	s.g.Expect(conditionMessage(s.get("unsized"), sizerv1alpha1.ConditionConflict)).To(And(ContainSubstring("sizer-hpa"), ContainSubstring("spec.size")))

	s.update("unsized", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = ptr.To[int32](2) })
	s.g.Eventually(s.condition("unsized", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
}

// A VerticalPodAutoscaler that updates the workload's pods while spec.resources sizes them is reported by name;
// one that only recommends (updateMode Off) is not.
func TestAVerticalAutoscalerOnTheWorkloadIsReported(t *testing.T) {
	s := newScenario(t)
	installVPACRD(s)
	startController(t)
	s.deployment("vertical", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x"})
	vpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": "vertical-vpa", "namespace": s.ns},
		"spec": map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "vertical"},
			"updatePolicy": map[string]any{"updateMode": "Recreate"}}}}
	s.g.Expect(env.Client.Create(s.ctx, vpa)).To(Succeed())
	s.sizer("vertical", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("vertical"), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "100m")}}})
	s.g.Eventually(s.condition("vertical", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonVerticalAutoscaler))
	s.g.Expect(conditionMessage(s.get("vertical"), sizerv1alpha1.ConditionConflict)).To(And(ContainSubstring("vertical-vpa"), ContainSubstring("Recreate")))

	s.g.Expect(unstructured.SetNestedField(vpa.Object, "Off", "spec", "updatePolicy", "updateMode")).To(Succeed())
	s.g.Expect(env.Client.Update(s.ctx, vpa)).To(Succeed())
	// The autoscaler's objects are not watched, and a namespace's list serves its sizers' passes for 30 s: a pass
	// after that (a change of the sizer brings one) sees the autoscaler's change.
	cpu := 150
	s.g.Eventually(func() string {
		cpu++
		s.update("vertical", func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Resources[0].Requests = rl("cpu", fmt.Sprintf("%dm", cpu))
		})
		return s.condition("vertical", sizerv1alpha1.ConditionConflict)()
	}, 45*time.Second, 2*time.Second).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
}

// installVPACRD installs a minimal CustomResourceDefinition of the vertical pod autoscaler's objects, once.
func installVPACRD(s *scenario) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "verticalpodautoscalers.autoscaling.k8s.io",
			"annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/63797"}},
		"spec": map[string]any{"group": "autoscaling.k8s.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "verticalpodautoscalers", "singular": "verticalpodautoscaler",
				"kind": "VerticalPodAutoscaler", "listKind": "VerticalPodAutoscalerList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	if err := env.Client.Create(s.ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Fatal(err)
	}
	s.g.Eventually(func() error {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("autoscaling.k8s.io/v1")
		list.SetKind("VerticalPodAutoscalerList")
		return env.Client.List(s.ctx, list, client.InNamespace(s.ns))
	}, timeout, poll).Should(Succeed())
}

// A failed apply shows in Sized (reason and message) and leaves observedGeneration where it was.
func TestAFailedApplyIsReportedAndNotObserved(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("bad", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x"})
	s.sizer("bad", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("bad"), Size: ptr.To[int32](1), ForceOwnership: true})
	s.g.Eventually(s.condition("bad", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
	s.g.Eventually(func() int64 { return s.get("bad").Status.ObservedGeneration }, timeout, poll).Should(Equal(int64(1)))

	// A resource name the apiserver refuses in a pod template (it is neither standard nor domain-qualified).
	s.update("bad", func(w *sizerv1alpha1.WorkloadSizer) {
		w.Spec.Resources = []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("widgets", "1")}}
	})
	s.g.Eventually(s.condition("bad", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonApplyFailed))
	s.g.Expect(conditionMessage(s.get("bad"), sizerv1alpha1.ConditionSized)).To(ContainSubstring("widgets"))
	s.g.Expect(s.condition("bad", sizerv1alpha1.ConditionReady)()).To(Equal("False/" + sizerv1alpha1.ReasonApplyFailed))
	s.g.Consistently(func() int64 { return s.get("bad").Status.ObservedGeneration }, time.Second, poll).Should(Equal(int64(1)))
}

// Ready reflects a workload that cannot create its pods (a quota, an admission webhook).
func TestReadyReflectsAWorkloadThatCannotCreatePods(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("quota", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x"})
	s.sizer("quota", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("quota"), ForceOwnership: true})
	// The Deployment controller's part: its one replica ready.
	d := s.getDeployment("quota")
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1}
	s.g.Expect(env.Client.Status().Update(s.ctx, d)).To(Succeed())
	s.g.Eventually(s.condition("quota", sizerv1alpha1.ConditionReady), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonReady))

	d = s.getDeployment("quota")
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: `pods "quota-1" is forbidden: exceeded quota: compute`}}
	s.g.Expect(env.Client.Status().Update(s.ctx, d)).To(Succeed())
	s.g.Eventually(s.condition("quota", sizerv1alpha1.ConditionReady), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonReplicaFailure))
	s.g.Expect(conditionMessage(s.get("quota"), sizerv1alpha1.ConditionReady)).To(ContainSubstring("exceeded quota"))
}

// Under forceOwnership, a writer that keeps taking the fields back (a GitOps tool syncing with force) is not
// fought forever: after three take-backs the sizer stops forcing and names it.
func TestATakeBackLoopIsStoppedAndReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	gitopsApply := func() {
		labels := map[string]string{"app": "synced"}
		d := appsv1ac.Deployment("synced", s.ns).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().WithContainers(
				corev1ac.Container().WithName("app").WithImage("x")))))
		s.g.Expect(env.Client.Apply(s.ctx, d, client.FieldOwner("gitops"), client.ForceOwnership)).To(Succeed())
	}
	replicas := func() int32 { return *s.getDeployment("synced").Spec.Replicas }
	gitopsApply()
	s.sizer("synced", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("synced"), Size: ptr.To[int32](4), ForceOwnership: true})
	s.g.Eventually(replicas, timeout, poll).Should(Equal(int32(4)))
	for range 3 {
		gitopsApply()
		s.g.Eventually(replicas, timeout, poll).Should(Equal(int32(4)), "the sizer takes the field back")
	}
	gitopsApply()
	s.g.Eventually(s.condition("synced", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonTakenBack))
	s.g.Expect(conditionMessage(s.get("synced"), sizerv1alpha1.ConditionConflict)).To(ContainSubstring(`"gitops"`))
	s.g.Consistently(replicas, time.Second, poll).Should(Equal(int32(2)), "the sizer stopped forcing")

	// A new spec is a new request: the sizer forces it again.
	s.update("synced", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = ptr.To[int32](5) })
	s.g.Eventually(replicas, timeout, poll).Should(Equal(int32(5)))
}

// Back to Rolling after Off: the variables the sizer handed over (nobody owns them now) are its own again and
// follow the limits, instead of staying at their old values as if a user had set them.
func TestReturningToRollingTakesItsVariablesBack(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("back", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x",
		Env: []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "16"}}})
	res := func(mem string) []sizerv1alpha1.ContainerResources {
		return []sizerv1alpha1.ContainerResources{{ContainerName: "app", Limits: rl("cpu", "1", "memory", mem),
			ControlledValues: sizerv1alpha1.RequestsAndLimits}}
	}
	envOf := s.envOf("back")
	s.sizer("back", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("back"), ForceOwnership: true, Resources: res("1Gi"),
		Runtime: &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](10)}})
	s.g.Eventually(envOf, timeout, poll).Should(Equal(map[string]string{"GOMAXPROCS": "16", "GOMEMLIMIT": "921MiB"}),
		"the user's GOMAXPROCS stays theirs")
	s.update("back", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.UpdateMode = sizerv1alpha1.UpdateModeOff })
	s.g.Eventually(func() int64 { return s.get("back").Status.ObservedGeneration }, timeout, poll).Should(Equal(s.get("back").Generation))
	s.update("back", func(w *sizerv1alpha1.WorkloadSizer) {
		w.Spec.UpdateMode = sizerv1alpha1.UpdateModeRolling
		w.Spec.Resources = res("512Mi")
	})
	s.g.Eventually(envOf, timeout, poll).Should(Equal(map[string]string{"GOMAXPROCS": "16", "GOMEMLIMIT": "460MiB"}),
		"GOMEMLIMIT follows the new limit; the user's GOMAXPROCS is still theirs")
}

// The Service selects on the target's selector, not on every template label: a label that changes with each
// release (version) would leave the Service empty during a rollout.
func TestTheServiceSelectsOnTheTargetsSelector(t *testing.T) {
	s := newScenario(t)
	startController(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api", "version": "v7"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}}}}}}
	s.g.Expect(env.Client.Create(s.ctx, d)).To(Succeed())
	s.sizer("api", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("api"),
		Expose: &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 80, Type: corev1.ServiceTypeClusterIP}}})
	var svc corev1.Service
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "api"}, &svc)
	}, timeout, poll).Should(Succeed())
	s.g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "api"}))
	s.g.Expect(svc.Spec.Ports[0].TargetPort.IntValue()).To(Equal(80), "targetPort follows the port")
}

// A workload that another controller controls (a Pipeline's step Deployment, say) is not sized: that controller
// writes its spec, and the two would undo each other's writes, rolling its pods each time. The sizer reports the
// controller by name and writes nothing; once the workload is released (no controller), it sizes it.
func TestAWorkloadOfAnotherControllerIsNotSized(t *testing.T) {
	s := newScenario(t)
	startController(t)
	d := s.deployment("step", "keelson-pipeline-controller", ptr.To[int32](1), corev1.Container{Name: "server", Image: "x"})
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "inference.keelson.dev/v1alpha1", Kind: "Pipeline", Name: "faces",
		UID: "3f1c7a52-0000-4000-8000-000000000001", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	s.g.Expect(env.Client.Update(s.ctx, d)).To(Succeed())
	s.sizer("step", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("step"), Size: ptr.To[int32](3), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "server", Requests: rl("cpu", "100m")}}})
	s.g.Eventually(s.condition("step", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonTargetControlled))
	s.g.Expect(conditionMessage(s.get("step"), sizerv1alpha1.ConditionConflict)).To(ContainSubstring("Deployment step is controlled by Pipeline faces"))
	s.g.Expect(s.condition("step", sizerv1alpha1.ConditionReady)()).To(Equal("False/" + sizerv1alpha1.ReasonTargetControlled))
	s.g.Consistently(func() int32 { return *s.getDeployment("step").Spec.Replicas }, time.Second, poll).Should(Equal(int32(1)))
	s.g.Expect(s.getDeployment("step").Spec.Template.Spec.Containers[0].Resources.Requests).To(BeEmpty())
	s.g.Expect(managersOf(s.getDeployment("step"))).NotTo(ContainElement(HavePrefix(sizer.FieldOwner)))

	d = s.getDeployment("step")
	d.OwnerReferences = nil
	s.g.Expect(env.Client.Update(s.ctx, d)).To(Succeed())
	s.g.Eventually(func() int32 { return *s.getDeployment("step").Spec.Replicas }, timeout, poll).Should(Equal(int32(3)))
	s.g.Eventually(s.condition("step", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
}

// A sizer deleted with --cascade=orphan leaves its workload and Service without an owner (the garbage collector
// takes its references off); the sizer applied again adopts them, as apps/v1 adopts its orphans, instead of
// refusing them as someone else's. A user's object of the same name is still not taken (TestUsersObjectsNamedLikeTheTargetAreLeftAlone).
func TestASizerAppliedAgainAdoptsItsOrphans(t *testing.T) {
	s := newScenario(t)
	startController(t)
	d, mine, pods := s.orphanedDeployment("again", 2)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "again", Namespace: s.ns, Labels: mine},
		Spec: corev1.ServiceSpec{Selector: pods, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	s.g.Expect(env.Client.Create(s.ctx, svc)).To(Succeed())

	s.sizer("again", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("again"), Image: "web:v1", Size: ptr.To[int32](2),
		Expose: &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 80, TargetPort: 8080}}})
	s.g.Eventually(s.condition("again", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
	uid := s.get("again").UID
	controller := func(obj client.Object) func() types.UID {
		return func() types.UID {
			if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return ""
			}
			if ref := metav1.GetControllerOf(obj); ref != nil {
				return ref.UID
			}
			return ""
		}
	}
	s.g.Eventually(controller(&appsv1.Deployment{ObjectMeta: d.ObjectMeta}), timeout, poll).Should(Equal(uid), "the workload was not adopted")
	s.g.Eventually(controller(&corev1.Service{ObjectMeta: svc.ObjectMeta}), timeout, poll).Should(Equal(uid), "the Service was not adopted")
}

// A sizer that would not create its target (no image, no template) sizes an orphaned workload of its name as the
// user's, and does not take it: it could not apply the whole of it.
func TestASizeOnlySizerDoesNotAdoptItsTarget(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.orphanedDeployment("sized", 1)
	s.sizer("sized", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("sized"), Size: ptr.To[int32](2), ForceOwnership: true})
	s.g.Eventually(func() int32 { return *s.getDeployment("sized").Spec.Replicas }, timeout, poll).Should(Equal(int32(2)))
	s.g.Expect(metav1.GetControllerOf(s.getDeployment("sized"))).To(BeNil())
	// The status is written after the workload: a pass that has sized it may not have recorded it yet.
	s.g.Eventually(s.condition("sized", sizerv1alpha1.ConditionTargetFound), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonFound))
	s.g.Expect(metav1.GetControllerOf(s.getDeployment("sized"))).To(BeNil(), "adopted after it was sized")
	s.g.Expect(s.getDeployment("sized").Spec.Template.Spec.Containers[0].Image).To(Equal("web:v1"))
}

// orphanedDeployment creates a Deployment as a sizer of that name made it and an orphan delete left it: its labels,
// no owner. It returns it, its labels and its pods' labels.
func (s *scenario) orphanedDeployment(name string, replicas int32) (*appsv1.Deployment, map[string]string, map[string]string) {
	mine := map[string]string{sizerv1alpha1.NameLabel: name, "app.kubernetes.io/managed-by": "keelson", "app.kubernetes.io/part-of": "keelson"}
	pods := map[string]string{sizerv1alpha1.NameLabel: name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: mine},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v1"}}}}}}
	s.g.Expect(env.Client.Create(s.ctx, d)).To(Succeed())
	return d, mine, pods
}
