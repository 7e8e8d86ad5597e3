// Package daemonset holds the admission webhooks of Keelson's DaemonSet: a defaulter that fills in the selector,
// the update strategy and the template from the image shorthand, and a validator that rejects what the controller
// could not run, with field paths. The CRD's CEL rules repeat every check CEL can afford, so invalid objects are
// rejected even while the webhook is down; the webhook adds what CEL cannot (template labels against the selector,
// hostPort with surge, percentages) and clearer messages.
package daemonset

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/webhooks/internal/defaulting"
)

// +kubebuilder:webhook:path=/mutate-daemonset-keelson-dev-v1alpha1-daemonset,mutating=true,failurePolicy=fail,sideEffects=None,groups=daemonset.keelson.dev,resources=daemonsets,verbs=create;update,versions=v1alpha1,name=mdaemonset.keelson.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-daemonset-keelson-dev-v1alpha1-daemonset,mutating=false,failurePolicy=fail,sideEffects=None,groups=daemonset.keelson.dev,resources=daemonsets,verbs=create;update,versions=v1alpha1,name=vdaemonset.keelson.dev,admissionReviewVersions=v1

// mutatePath is the defaulting webhook's path, as the marker above gives it.
const mutatePath = "/mutate-daemonset-keelson-dev-v1alpha1-daemonset"

// SetupWithManager registers the DaemonSet's defaulting and validating webhooks with the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager) error {
	defaulting.Register(mgr, mutatePath, &daemonsetv1alpha1.DaemonSet{}, Defaulter{})
	return ctrl.NewWebhookManagedBy(mgr, &daemonsetv1alpha1.DaemonSet{}).
		WithValidator(Validator{Pods: mgr.GetClient()}).
		Complete()
}

// Defaulter fills in a DaemonSet's defaults.
type Defaulter struct{}

// Default applies Default to the admitted object.
func (Defaulter) Default(_ context.Context, ds *daemonsetv1alpha1.DaemonSet) error {
	Default(ds)
	return nil
}

// Validator rejects invalid DaemonSets.
type Validator struct {
	// Pods, when set, dry-runs a new or changed template as a Pod, so a template the apiserver would refuse as a
	// pod is refused with the DaemonSet (checkTemplate). Without it only the webhook's own checks run.
	Pods client.Client
}

var groupKind = daemonsetv1alpha1.GroupVersion.WithKind("DaemonSet").GroupKind()

// ValidateCreate checks a new DaemonSet.
func (v Validator) ValidateCreate(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) (admission.Warnings, error) {
	errs := Validate(ds)
	if len(errs) == 0 && v.Pods != nil {
		errs = checkTemplate(ctx, v.Pods, ds)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, ds.Name, errs)
	}
	return nil, nil
}

// ValidateUpdate checks a changed DaemonSet, including that its selector did not change.
func (v Validator) ValidateUpdate(ctx context.Context, old, ds *daemonsetv1alpha1.DaemonSet) (admission.Warnings, error) {
	errs := append(validate(ds, old), ValidateUpdate(old, ds)...)
	if len(errs) == 0 && v.Pods != nil && templateNeedsCheck(ds, old) {
		errs = checkTemplate(ctx, v.Pods, ds)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, ds.Name, errs)
	}
	return nil, nil
}

// ValidateDelete allows every deletion.
func (Validator) ValidateDelete(context.Context, *daemonsetv1alpha1.DaemonSet) (admission.Warnings, error) {
	return nil, nil
}
