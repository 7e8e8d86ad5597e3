package sizer

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
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
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "sizer.keelson.dev", Resource: "workloadsizers"}, "s",
				errors.New("the object has been modified"))
		}}).Build()
	res, err := (&Reconciler{Client: c}).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wls)})
	if err != nil || res.RequeueAfter == 0 {
		t.Fatalf("Reconcile = %+v, %v; want a requeue and no error", res, err)
	}
}

// A create refused because the namespace is being deleted is nothing to retry: the namespace's deletion removes the
// sizer too, and until then every retry would be refused and logged again.
func TestANamespaceBeingDeletedIsNoError(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "",
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	refused.ErrStatus.Details.Causes = append(refused.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace"})
	if res, err := passResult(refused); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("passResult = %+v, %v; want nothing to retry", res, err)
	}
	other := errors.New("boom")
	if _, err := passResult(other); !errors.Is(err, other) {
		t.Fatalf("another error became %v", err)
	}
}
