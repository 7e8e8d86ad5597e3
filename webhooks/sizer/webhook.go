// Package sizer holds the admission webhooks of Keelson's WorkloadSizer: defaults (update mode, profiles, ports,
// headroom) and validation of every rule with field paths, including what CEL in the CRD cannot afford (comparing
// resource quantities).
package sizer

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/webhooks/internal/defaulting"
)

// +kubebuilder:webhook:path=/mutate-sizer-keelson-dev-v1alpha1-workloadsizer,mutating=true,failurePolicy=fail,sideEffects=None,groups=sizer.keelson.dev,resources=workloadsizers,verbs=create;update,versions=v1alpha1,name=mworkloadsizer.keelson.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-sizer-keelson-dev-v1alpha1-workloadsizer,mutating=false,failurePolicy=fail,sideEffects=None,groups=sizer.keelson.dev,resources=workloadsizers,verbs=create;update,versions=v1alpha1,name=vworkloadsizer.keelson.dev,admissionReviewVersions=v1

// mutatePath is the defaulting webhook's path, as the marker above gives it.
const mutatePath = "/mutate-sizer-keelson-dev-v1alpha1-workloadsizer"

// SetupWithManager registers the WorkloadSizer's webhooks.
func SetupWithManager(mgr ctrl.Manager) error {
	defaulting.Register(mgr, mutatePath, &sizerv1alpha1.WorkloadSizer{}, Defaulter{})
	RegisterContainerStubs(mgr)
	return ctrl.NewWebhookManagedBy(mgr, &sizerv1alpha1.WorkloadSizer{}).
		WithValidator(Validator{Reader: mgr.GetClient()}).
		Complete()
}

// Defaulter fills in a WorkloadSizer's defaults.
type Defaulter struct{}

// Default applies Default. A new sizer also gets the controller's finalizer here, in the request that creates it:
// the controller would otherwise spend a write on each new sizer before sizing anything (it still adds the
// finalizer itself where this webhook does not run).
func (Defaulter) Default(ctx context.Context, w *sizerv1alpha1.WorkloadSizer) error {
	Default(w)
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Create {
		controllerutil.AddFinalizer(w, sizerv1alpha1.Finalizer)
	}
	return nil
}

// Validator rejects invalid WorkloadSizers.
type Validator struct {
	// Reader lists the namespace's sizers, to refuse a second sizer for one workload.
	Reader client.Reader
}

var groupKind = sizerv1alpha1.GroupVersion.WithKind("WorkloadSizer").GroupKind()

// ValidateCreate checks a new sizer, and that no other sizer of its namespace sizes its workload.
func (v Validator) ValidateCreate(ctx context.Context, w *sizerv1alpha1.WorkloadSizer) (admission.Warnings, error) {
	errs := Validate(w)
	if v.Reader != nil {
		var list sizerv1alpha1.WorkloadSizerList
		if err := v.Reader.List(ctx, &list, client.InNamespace(w.Namespace)); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("listing the namespace's WorkloadSizers: %w", err))
		}
		errs = append(errs, ValidateUnique(w, list.Items)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, w.Name, errs)
	}
	return Warnings(w), nil
}

// ValidateUpdate checks a changed sizer; its target may not change.
func (Validator) ValidateUpdate(_ context.Context, old, w *sizerv1alpha1.WorkloadSizer) (admission.Warnings, error) {
	errs := append(Validate(w), ValidateUpdate(old, w)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, w.Name, errs)
	}
	return Warnings(w), nil
}

// ValidateDelete allows every deletion.
func (Validator) ValidateDelete(context.Context, *sizerv1alpha1.WorkloadSizer) (admission.Warnings, error) {
	return nil, nil
}
