//go:build integration

package pipeline_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// oneStep creates a pipeline of one unpinned step on the user's claim.
func (s *scenario) oneStep(name string, step inferencev1alpha1.Step) {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps:        []inferencev1alpha1.Step{step},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
}

func (s *scenario) deployment(name string) *appsv1.Deployment {
	var d appsv1.Deployment
	if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &d); err != nil {
		return nil
	}
	return &d
}

// events lists the reasons and notes of the events regarding a pipeline.
func (s *scenario) events(name string) []string {
	return env.Events(s.ctx, s.ns, "Pipeline", name)
}

// Adding a GPU to a one-replica step switches its Deployment to Recreate (the default for it), though the live
// Deployment holds the rollingUpdate parameters the apiserver defaulted, which nobody owns.
func TestSwitchingAStepToRecreate(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("gpu", inferencev1alpha1.Step{Name: "model", Image: "x"})
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment("gpu-model") }, timeout, poll).ShouldNot(BeNil())
	s.g.Expect(s.deployment("gpu-model").Spec.Strategy.RollingUpdate).NotTo(BeNil(), "the apiserver defaults rollingUpdate")

	s.g.Eventually(func() error {
		p := s.get("gpu")
		p.Spec.Steps[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	// The switch to Recreate and the apply of the GPU are two writes: wait for the second.
	s.g.Eventually(func() corev1.ResourceList {
		return s.deployment("gpu-model").Spec.Template.Spec.Containers[0].Resources.Limits
	},
		timeout, poll).Should(HaveKey(corev1.ResourceName("nvidia.com/gpu")))
	d := s.deployment("gpu-model")
	s.g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
	s.g.Expect(d.Spec.Strategy.RollingUpdate).To(BeNil())
	s.g.Eventually(func() int64 { return s.get("gpu").Status.ObservedGeneration }, timeout, poll).Should(Equal(s.get("gpu").Generation))
	s.g.Expect(s.stepStatus("gpu", "model").Reason).NotTo(Equal(inferencev1alpha1.ReasonApplyFailed))
}

// A step the apiserver refuses (here a CPU request above its limit) is reported on the step, in the Ready
// condition's reason and as an event; observedGeneration does not move until a pass succeeds.
func TestFailedApplyIsReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("bad", inferencev1alpha1.Step{Name: "model", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}})

	s.g.Eventually(func() string { return s.stepStatus("bad", "model").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonApplyFailed))
	st := s.get("bad").Status
	s.g.Expect(s.stepStatus("bad", "model").Message).To(ContainSubstring("must be less than or equal to cpu limit"))
	s.g.Expect(s.stepStatus("bad", "model").Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	s.g.Expect(st.ObservedGeneration).To(BeZero(), "no pass of generation 1 succeeded")
	ready := meta.FindStatusCondition(st.Conditions, inferencev1alpha1.ConditionReady)
	s.g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	s.g.Expect(ready.Reason).To(Equal(inferencev1alpha1.ReasonApplyFailed))
	s.g.Expect(st.StepsReady).To(Equal("0/1"))
	s.g.Eventually(func() []string { return s.events("bad") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Warning ApplyFailed: Step model:"), ContainSubstring("cpu limit"))))
	s.g.Expect(s.events("bad")).To(ContainElement(HavePrefix("Warning PipelineFailed")))

	// Fixed: the pass succeeds and observedGeneration catches up.
	s.g.Eventually(func() error {
		p := s.get("bad")
		p.Spec.Steps[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() int64 { return s.get("bad").Status.ObservedGeneration }, timeout, poll).Should(Equal(int64(2)))
	s.g.Expect(s.stepStatus("bad", "model").Reason).NotTo(Equal(inferencev1alpha1.ReasonApplyFailed))
}

// A Deployment of a step's name that is not the pipeline's (here the user's) is never written over; the step says
// so. It is the controller's side of two pipelines whose names clash (a + b-c and a-b + c).
func TestNameTakenIsNotOverwritten(t *testing.T) {
	s := newScenario(t)
	startController(t)
	mine := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "a-b-c", Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mine"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mine"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "mine:v1"}}}}}}
	s.g.Expect(env.Client.Create(s.ctx, mine)).To(Succeed())
	s.oneStep("a", inferencev1alpha1.Step{Name: "b-c", Image: "x"})
	s.g.Eventually(func() string { return s.stepStatus("a", "b-c").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNameTaken))
	d := s.deployment("a-b-c")
	s.g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("mine:v1"))
	s.g.Expect(d.OwnerReferences).To(BeEmpty())
	s.g.Expect(strings.Join(s.events("a"), "\n")).To(ContainSubstring("NameTaken"))
}
