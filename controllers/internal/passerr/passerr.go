// Package passerr sorts the errors one reconcile pass met: the refusals nothing can cure (a create in a namespace
// being deleted), the conflicts worth only a short requeue, and the rest, worth an error and its backoff. A pass
// joins the errors of its writes (errors.Join), so the sorting looks at each one, not at the first.
package passerr

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Leaves returns the errors err is made of: it follows wrapping (%w) and joins (errors.Join) down to the errors
// that wrap nothing. Nil has no leaves.
func Leaves(err error) []error {
	if err == nil {
		return nil
	}
	switch u := err.(type) { //nolint:errorlint // this walks the wrapping itself, one level at a time
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, Leaves(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return Leaves(inner)
		}
	}
	return []error{err}
}

// NamespaceTerminating reports whether err is a create refused because its namespace is being deleted: nothing
// created there would stay, and the namespace's deletion removes the object the pass was for too.
func NamespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// Remaining returns the leaves of err that still matter once its namespace is going: all but the refusals of
// NamespaceTerminating. Nil when none does.
func Remaining(err error) []error {
	var out []error
	for _, e := range Leaves(err) {
		if !NamespaceTerminating(e) {
			out = append(out, e)
		}
	}
	return out
}

// Gone ends a pass whose object could not be read: when it is gone (NotFound), forget drops what the controller
// remembers of it and there is nothing to retry; any other error is the pass's, to be retried.
func Gone(err error, forget func()) (reconcile.Result, error) {
	if apierrors.IsNotFound(err) {
		forget()
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// OnlyNamespaceTerminating reports whether err is not nil and made of NamespaceTerminating refusals alone: the
// pass created nothing because its namespace is going, which is no error to retry.
func OnlyNamespaceTerminating(err error) bool {
	return err != nil && len(Remaining(err)) == 0
}

// All reports whether errs is not empty and every one of them satisfies is.
func All(errs []error, is func(error) bool) bool {
	for _, e := range errs {
		if !is(e) {
			return false
		}
	}
	return len(errs) > 0
}

// NewNamespaceTerminating is the apiserver's answer to a create of resource in namespace while the namespace is
// being deleted, as its NamespaceLifecycle admission gives it.
func NewNamespaceTerminating(resource, namespace string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "",
		errors.New("unable to create new content in namespace "+namespace+" because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace " + namespace + " is being terminated",
		Field: "metadata.namespace"})
	return err
}
