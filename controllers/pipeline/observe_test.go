//go:build integration

package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// failingNodes is a live client whose node lists fail with err.
func failingNodes(s *scenario, err error) client.Client {
	live, cerr := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(cerr).NotTo(HaveOccurred())
	return interceptor.NewClient(live, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				return err
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// A pass that cannot read what the status is computed from (here the pinned nodes) writes no status: a status from
// partial data would say NodeNotFound for a node that exists, and move observedGeneration. The error is returned;
// a conflict is a short requeue.
func TestFailedObserveWritesNoStatus(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "blind", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: "x", Location: s.ns + "-gpu"}},
		}}
	s.g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: s.ns, Name: "blind"}}

	unavailable := apierrors.NewServiceUnavailable("the apiserver is busy")
	r := &pipeline.Reconciler{Client: failingNodes(s, unavailable)}
	_, err := r.Reconcile(ctx, req)
	s.g.Expect(errors.Is(err, unavailable) || apierrors.IsServiceUnavailable(err)).To(BeTrue(), "%v", err)
	st := s.get("blind").Status
	s.g.Expect(st.ObservedGeneration).To(BeZero())
	s.g.Expect(st.Steps).To(BeEmpty(), "no status from partial data")
	s.g.Expect(st.Phase).To(BeEmpty())

	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "x", errors.New("changed"))
	r = &pipeline.Reconciler{Client: failingNodes(s, conflict)}
	res, err := r.Reconcile(ctx, req)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	s.g.Expect(s.get("blind").Status.Steps).To(BeEmpty())
}

// failingApplies is a live client whose server-side applies fail with err.
func failingApplies(s *scenario, err error) client.Client {
	live, cerr := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(cerr).NotTo(HaveOccurred())
	return interceptor.NewClient(live, interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return err
		},
	})
}

// A write that fails for a reason that is not a refusal (throttling, an unavailable apiserver) is not the step's
// failure: the step keeps its status, observedGeneration stays, and the error is returned for a retry. A refusal is
// ApplyFailed (TestFailedApplyIsReported).
func TestTransientApplyErrorIsNotAFailure(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	s.oneStep("busy", inferencev1alpha1.Step{Name: "model", Image: "x"})
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: s.ns, Name: "busy"}}
	live, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	_, err = (&pipeline.Reconciler{Client: live}).Reconcile(ctx, req)
	s.g.Expect(err).NotTo(HaveOccurred())
	before := s.stepStatus("busy", "model")
	s.g.Expect(before.Reason).To(Equal(inferencev1alpha1.ReasonStarting))
	s.g.Expect(s.get("busy").Status.ObservedGeneration).To(Equal(int64(1)))

	p := s.get("busy")
	p.Spec.Steps[0].Image = "y"
	s.g.Expect(env.Client.Update(ctx, p)).To(Succeed())
	for _, transient := range []error{
		apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewServiceUnavailable("busy"),
		apierrors.NewTimeoutError("timed out", 1),
		apierrors.NewInternalError(errors.New("etcd hiccup")),
	} {
		_, err = (&pipeline.Reconciler{Client: failingApplies(s, transient)}).Reconcile(ctx, req)
		s.g.Expect(err).To(HaveOccurred(), "retried")
		st := s.get("busy").Status
		s.g.Expect(s.stepStatus("busy", "model")).To(Equal(before), "%v: the step keeps its status", transient)
		s.g.Expect(st.ObservedGeneration).To(Equal(int64(1)), "%v: generation 2 was not written", transient)
	}
}

// The status is written so that it never conflicts with the controller's own last write, however far the cache lags
// it: a pass whose cache still shows the pipeline as it was before that write neither writes the same status again
// nor fails to write a new one. The reconciler here reads the pipeline from a cache that never sees a write.
func TestStatusWritesFromALaggingCache(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "lagging", Namespace: s.ns,
		Finalizers: []string{inferencev1alpha1.Finalizer}},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: "x", Location: s.ns + "-late"}},
		}}
	s.g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	stale := p.DeepCopy() // as created: no status, and the resourceVersion of its creation
	live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	statusWrites := 0
	lagging := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*inferencev1alpha1.Pipeline); ok && key.Name == stale.Name {
				stale.DeepCopyInto(got)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			statusWrites++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	r := &pipeline.Reconciler{Client: lagging, APIReader: live}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: s.ns, Name: "lagging"}}
	pass := func() {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		s.g.Expect(err).NotTo(HaveOccurred())
		s.g.Expect(res.RequeueAfter == 0 || res.RequeueAfter >= time.Second).To(BeTrue(),
			"a short requeue (%s): the status write conflicted", res.RequeueAfter)
	}

	pass()
	s.g.Expect(statusWrites).To(Equal(1))
	s.g.Expect(s.stepStatus("lagging", "a").Reason).To(Equal(inferencev1alpha1.ReasonNodeNotFound))
	pass()
	s.g.Expect(statusWrites).To(Equal(1), "the status last written was written again")

	s.node(s.ns+"-late", 0, false)
	pass()
	s.g.Expect(statusWrites).To(Equal(2))
	s.g.Expect(s.stepStatus("lagging", "a").Reason).NotTo(Equal(inferencev1alpha1.ReasonNodeNotFound),
		"the new status was not written")
}
