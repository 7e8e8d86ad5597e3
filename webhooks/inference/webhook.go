// Package inference holds the admission webhooks of Keelson's Pipeline: defaults (step names, ports, strategies)
// and validation (unique DNS-1123 step names, next steps that exist and form a DAG, storage parameters per type,
// images), with field paths, and warnings (not errors) for steps pinned to nodes that do not exist right now.
package inference

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1 "k8s.io/api/core/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-inference-keelson-dev-v1alpha1-pipeline,mutating=true,failurePolicy=fail,sideEffects=None,groups=inference.keelson.dev,resources=pipelines,verbs=create;update,versions=v1alpha1,name=mpipeline.keelson.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-inference-keelson-dev-v1alpha1-pipeline,mutating=false,failurePolicy=fail,sideEffects=None,groups=inference.keelson.dev,resources=pipelines,verbs=create;update,versions=v1alpha1,name=vpipeline.keelson.dev,admissionReviewVersions=v1

// SetupWithManager registers the Pipeline's webhooks.
func SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &inferencev1alpha1.Pipeline{}).
		WithDefaulter(Defaulter{}).
		WithValidator(Validator{Reader: mgr.GetAPIReader()}).
		Complete()
}

// Defaulter fills in a Pipeline's defaults.
type Defaulter struct{}

// Default applies Default.
func (Defaulter) Default(_ context.Context, p *inferencev1alpha1.Pipeline) error {
	Default(p)
	return nil
}

// Validator rejects invalid Pipelines and warns about steps pinned to missing nodes.
type Validator struct {
	// Reader looks nodes up for the warnings.
	Reader client.Reader
}

var groupKind = inferencev1alpha1.GroupVersion.WithKind("Pipeline").GroupKind()

// ValidateCreate checks a new pipeline.
func (v Validator) ValidateCreate(ctx context.Context, p *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	if errs := Validate(p); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, p.Name, errs)
	}
	return v.warnings(ctx, p), nil
}

// ValidateUpdate checks a changed pipeline; its storage may not change.
func (v Validator) ValidateUpdate(ctx context.Context, old, p *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	errs := append(Validate(p), ValidateUpdate(old, p)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, p.Name, errs)
	}
	return v.warnings(ctx, p), nil
}

// ValidateDelete allows every deletion.
func (Validator) ValidateDelete(context.Context, *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	return nil, nil
}

// warnings says which pinned nodes do not exist now: the pipeline is admitted (the node may join later) and its
// status will say the step waits for it.
func (v Validator) warnings(ctx context.Context, p *inferencev1alpha1.Pipeline) admission.Warnings {
	if v.Reader == nil {
		return nil
	}
	var out admission.Warnings
	for i, s := range p.Spec.Steps {
		if s.Location == "" {
			continue
		}
		err := v.Reader.Get(ctx, types.NamespacedName{Name: s.Location}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("spec.steps[%d].location: node %s does not exist (yet); the step will wait for it", i, s.Location))
		}
	}
	return out
}
