package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// A pass's errors become its result: conflicts (a write that raced another, the finalizer's included) are a short
// requeue; a namespace being deleted, which will remove the Pipeline too, is nothing to retry; anything else is an
// error, retried with backoff.
func TestPassResult(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "inference.keelson.dev", Resource: "pipelines"}, "p",
		errors.New("the object has been modified"))
	other := errors.New("boom")
	for _, tc := range []struct {
		name      string
		err       error
		requeue   time.Duration
		wantError bool
	}{
		{"none", nil, 0, false},
		{"a conflict adding the finalizer", fmt.Errorf("adding the finalizer: %w", conflict), conflictRequeue, false},
		{"only conflicts", errors.Join(conflict, fmt.Errorf("writing status: %w", conflict)), conflictRequeue, false},
		{"the namespace being deleted", fmt.Errorf("creating Deployment p-a: %w", passerr.NewNamespaceTerminating("deployments", "ns")), 0, false},
		{"a conflict and another error", errors.Join(conflict, other), 0, true},
		{"the namespace being deleted and a conflict", errors.Join(conflict, passerr.NewNamespaceTerminating("services", "ns")), conflictRequeue, false},
		{"the namespace being deleted and another error", errors.Join(passerr.NewNamespaceTerminating("services", "ns"), other), 0, true},
		{"another error", other, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := passResult(tc.err)
			if (err != nil) != tc.wantError || res.RequeueAfter != tc.requeue {
				t.Fatalf("passResult = %+v, %v; want requeue %s, error %v", res, err, tc.requeue, tc.wantError)
			}
		})
	}
}

// A pass that adds the finalizer while another writer moved the Pipeline (a user's edit right after the create)
// looks again in a moment; it is no error, logged and backed off.
func TestAFinalizerConflictIsARequeue(t *testing.T) {
	requeuesOnAConflict(t, &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
}

// The last write of a deletion, removing the finalizer, may race another writer (a user's edit, the pass's own
// status write): it looks again in a moment, and is no error, logged and backed off.
func TestAFinalizerRemovalConflictIsARequeue(t *testing.T) {
	requeuesOnAConflict(t, &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
		Finalizers: []string{inferencev1alpha1.Finalizer}, DeletionTimestamp: &metav1.Time{Time: time.Now()}}})
}

// requeuesOnAConflict runs a pass over p whose writes of the pipeline all conflict: it must be a short requeue,
// and no error.
func requeuesOnAConflict(t *testing.T, p *inferencev1alpha1.Pipeline) {
	t.Helper()
	c := pipelineClient(t, p, interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return pipelineConflict()
		}})
	res, err := (&Reconciler{Client: c}).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	if err != nil || res.RequeueAfter != conflictRequeue {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after %s and no error", res, err, conflictRequeue)
	}
}

// pipelineClient is a fake client holding p, with the pipeline, core and apps kinds, whose calls funcs intercept.
func pipelineClient(t *testing.T, p *inferencev1alpha1.Pipeline, funcs interceptor.Funcs) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{inferencev1alpha1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(p).WithInterceptorFuncs(funcs).Build()
}

// pipelineConflict is the apiserver's answer to a write of a pipeline that another writer moved.
func pipelineConflict() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "inference.keelson.dev", Resource: "pipelines"}, "p",
		errors.New("the object has been modified"))
}

// The finalizer is written as a patch of the finalizers alone, never as an update of the whole object as the
// controller's types serialise it (which would send a spec stored another way through the spec's validation).
func TestFinalizersArePatchedNotUpdated(t *testing.T) {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	updates, patches := 0, 0
	c := pipelineClient(t, p, interceptor.Funcs{
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			updates++
			return errors.New("updated")
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			patches++
			data, err := patch.Data(obj)
			if err != nil {
				t.Fatal(err)
			}
			var sent map[string]any
			if err := json.Unmarshal(data, &sent); err != nil {
				t.Fatal(err)
			}
			meta, _ := sent["metadata"].(map[string]any)
			if patch.Type() != types.MergePatchType || len(sent) != 1 || len(meta) != 2 || meta["finalizers"] == nil ||
				meta["resourceVersion"] == nil {
				t.Errorf("the finalizer patch (%s) sends %s: want the finalizers and the resourceVersion alone", patch.Type(), data)
			}
			return pipelineConflict()
		}})
	if _, err := (&Reconciler{Client: c}).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
		t.Fatal(err)
	}
	if updates != 0 || patches != 1 {
		t.Fatalf("%d updates and %d patches of the pipeline, want 0 and 1", updates, patches)
	}
}
