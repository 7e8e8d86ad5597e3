//go:build integration

package pipeline_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A storage spec stored as the controller's types would not write it (empty lists and maps, which they omit;
// written while the webhook was down) must not stop the controller from adding its finalizer, nor from removing
// it: the pipeline runs, and is deleted when asked.
func TestAStorageSpecWithEmptyFieldsIsFinalized(t *testing.T) {
	s := newScenario(t)
	startController(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": inferencev1alpha1.GroupVersion.String(), "kind": "Pipeline",
		"metadata": map[string]any{"name": "empties", "namespace": s.ns},
		"spec": map[string]any{
			"modelStorage": map[string]any{"type": "pvc", "claimName": "models", "mountOptions": []any{}, "csiParameter": map[string]any{}},
			"steps":        []any{map[string]any{"name": "a", "image": "x"}},
		},
	}}
	s.g.Expect(env.Client.Create(s.ctx, u)).To(Succeed())
	s.g.Eventually(func() []string { return s.get("empties").Finalizers }, timeout, poll).Should(ContainElement(inferencev1alpha1.Finalizer))
	s.g.Eventually(func() *inferencev1alpha1.Pipeline { return s.get("empties") }, timeout, poll).Should(
		HaveField("Status.ObservedGeneration", BeNumerically(">", 0)))
	s.g.Expect(env.Client.Delete(s.ctx, u)).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKeyFromObject(u), &inferencev1alpha1.Pipeline{}))
	}, timeout, poll).Should(BeTrue(), "the pipeline is deleted")
}

// A pipeline whose steps all take their models elsewhere (a claim of their own, a URI) needs nothing of its storage:
// it is Ready while the storage's claim is not bound (one that binds when a pod first mounts it never would), and
// StorageReady still says how the claim stands.
func TestStorageNoStepMountsDoesNotHoldReady(t *testing.T) {
	s := newScenario(t)
	startController(t)
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "never-bound"},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: "x", Model: "pvc://team-models/a"}},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	s.rollOut("elsewhere-a")
	s.g.Eventually(s.phase("elsewhere"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))
	c := meta.FindStatusCondition(s.get("elsewhere").Status.Conditions, inferencev1alpha1.ConditionStorageReady)
	s.g.Expect(c).NotTo(BeNil())
	s.g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "the claim is not bound, and the status says so")

	// A step that mounts the storage holds the pipeline back until the claim binds.
	s.edit("elsewhere", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Model = "a" })
	s.g.Eventually(func() []string { return s.claimsOf("elsewhere-a") }, timeout, poll).Should(ConsistOf("never-bound"))
	s.rollOut("elsewhere-a")
	s.g.Eventually(func() metav1.ConditionStatus {
		if c := meta.FindStatusCondition(s.get("elsewhere").Status.Conditions, inferencev1alpha1.ConditionStepsReady); c != nil {
			return c.Status
		}
		return ""
	}, timeout, poll).Should(Equal(metav1.ConditionTrue))
	s.g.Expect(s.get("elsewhere").Status.Phase).To(Equal(inferencev1alpha1.PhaseProgressing), "every step is ready, the storage is not")
}
