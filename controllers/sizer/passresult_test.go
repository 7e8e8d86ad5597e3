package sizer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// A pass that adds the finalizer while another writer moved the sizer (an edit right after the create) looks again
// in a moment: a conflict is no error, logged and backed off.
func TestAFinalizerConflictIsARequeue(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := sizerv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wls := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(wls).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "sizer.keelson.dev", Resource: "workloadsizers"}, "s",
				errors.New("the object has been modified"))
		}}).Build()
	res, err := (&Reconciler{Client: c}).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wls)})
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("Reconcile = %+v, %v; want a requeue and no error", res, err)
	}
}

// A create refused because the namespace is being deleted is nothing to retry: the namespace's deletion removes the
// sizer too, and until then every retry would be refused and logged again. Every error the pass joined is looked
// at: a refusal beside a real error leaves the error, beside a conflict a requeue.
func TestANamespaceBeingDeletedIsNoError(t *testing.T) {
	refused := passerr.NewNamespaceTerminating("deployments", "ns")
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d", errors.New("modified"))
	other := errors.New("boom")
	for _, tc := range []struct {
		name        string
		err         error
		requeue     bool
		terminating bool
		wantErr     bool
	}{
		{"refused", fmt.Errorf("creating the Deployment: %w", refused), false, true, false},
		{"refused and a conflict", errors.Join(conflict, refused), true, false, false},
		{"refused and another error", errors.Join(refused, other), false, false, true},
		{"another error", other, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := passResult(tc.err)
			terminating := passerr.OnlyNamespaceTerminating(tc.err)
			if (res.RequeueAfter > 0) != tc.requeue || terminating != tc.terminating || (err != nil) != tc.wantErr {
				t.Fatalf("passResult = %+v, %v, %v", res, terminating, err)
			}
		})
	}
}

// A sizer deleted while its pass runs has no status to write: the write's NotFound is no error, logged and retried.
func TestAStatusWriteToADeletedSizerIsNoError(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{sizerv1alpha1.AddToScheme, clientgoscheme.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	wls := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Finalizers: []string{sizerv1alpha1.Finalizer}},
		Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone"}}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(wls).WithStatusSubresource(wls).WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			patches++
			return apierrors.NewNotFound(schema.GroupResource{Group: "sizer.keelson.dev", Resource: "workloadsizers"}, "s")
		}}).Build()
	res, err := (&Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), pacer: pacing.New(time.Second)}).Reconcile(context.Background(),
		ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wls)})
	if patches == 0 {
		t.Fatal("the pass wrote no status: the test tests nothing")
	}
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v; want nothing more to do", res, err)
	}
}
