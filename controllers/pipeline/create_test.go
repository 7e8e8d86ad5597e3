//go:build integration

package pipeline_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// A Service the user creates between the controller's read (the name is free) and its write is not taken over: the
// first write of a child is a create, which fails on a taken name (NameTaken), never a forced apply.
func TestObjectMadeAfterTheReadIsNotTakenOver(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	s.oneStep("race", inferencev1alpha1.Step{Name: "model", Image: "x"})
	mine := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "race-model", Namespace: s.ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	var once sync.Once
	racing := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Service); ok && key.Name == "race-model" {
				// The user's create lands right after the controller saw the name free.
				once.Do(func() { s.g.Expect(env.Client.Create(ctx, mine.DeepCopy())).To(Succeed()) })
				return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	r := &pipeline.Reconciler{Client: racing, APIReader: racing}
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: s.ns, Name: "race"}})

	var svc corev1.Service
	s.g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(mine), &svc)).To(Succeed())
	s.g.Expect(svc.OwnerReferences).To(BeEmpty(), "the user's Service was taken over")
	s.g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "mine"}))
	s.g.Expect(svc.Labels).To(BeEmpty())
	s.g.Expect(s.stepStatus("race", "model").Reason).To(Equal(inferencev1alpha1.ReasonNameTaken))
}

// A child the controller created loses a field the spec no longer has: its fields were handed from the create's
// Update entry to the apply field manager, so the apply that leaves the field out removes it.
func TestFieldDroppedAfterCreateIsRemoved(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("drop", inferencev1alpha1.Step{Name: "model", Image: "x", Env: []corev1.EnvVar{{Name: "EXTRA", Value: "1"}},
		Args: map[string]string{"threshold": "0.5"}})
	envOf := func() []string {
		d := s.deployment("drop-model")
		if d == nil {
			return nil
		}
		var names []string
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			names = append(names, e.Name)
		}
		return names
	}
	s.g.Eventually(envOf, timeout, poll).Should(ContainElement("EXTRA"))
	s.g.Eventually(func() error {
		p := s.get("drop")
		p.Spec.Steps[0].Env = nil
		p.Spec.Steps[0].Args = nil
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(envOf, timeout, poll).ShouldNot(ContainElement("EXTRA"))
	s.g.Expect(s.deployment("drop-model").Spec.Template.Spec.Containers[0].Args).To(BeEmpty())
	for _, m := range s.deployment("drop-model").ManagedFields {
		if m.Manager == pipeline.FieldOwner && m.Subresource == "" {
			s.g.Expect(m.Operation).To(Equal(metav1.ManagedFieldsOperationApply), "the controller's fields are its apply's")
		}
	}
}
