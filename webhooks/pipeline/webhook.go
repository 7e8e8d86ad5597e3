// Package pipeline holds the admission webhooks of Keelson's Pipeline: defaults (a lone step's name, the names of
// unchanged steps an old manifest leaves out, ports, strategies)
// and validation with field paths (unique DNS-1123 step names, a pipeline name that can name a Service, step object
// names that clash with no other pipeline's, next steps that exist and form a DAG, storage parameters per type,
// images, model paths inside the storage, extended resources such as GPUs with limits, a local-volume cache class
// that binds where its step runs), and warnings (not errors) for steps pinned to a kubernetes.io/hostname no node has
// right now. A pod webhook (fetcher.go) gives new step pods the running controller's model fetcher.
package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
	"github.com/keelson-dev/keelson/webhooks/internal/defaulting"
)

// +kubebuilder:webhook:path=/mutate-inference-keelson-dev-v1alpha1-pipeline,mutating=true,failurePolicy=fail,sideEffects=None,groups=inference.keelson.dev,resources=pipelines,verbs=create;update,versions=v1alpha1,name=mpipeline.keelson.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-inference-keelson-dev-v1alpha1-pipeline,mutating=false,failurePolicy=fail,sideEffects=None,groups=inference.keelson.dev,resources=pipelines,verbs=create;update,versions=v1alpha1,name=vpipeline.keelson.dev,admissionReviewVersions=v1

// mutatePath is the defaulting webhook's path, as the marker above gives it.
const mutatePath = "/mutate-inference-keelson-dev-v1alpha1-pipeline"

// SetupWithManager registers the Pipeline's webhooks, and the fetcher webhook that gives a step's new pods f.
func SetupWithManager(mgr ctrl.Manager, f pipelinespec.Fetcher) error {
	defaulting.Register(mgr, mutatePath, &inferencev1alpha1.Pipeline{}, Defaulter{})
	RegisterFetcher(mgr, f)
	return ctrl.NewWebhookManagedBy(mgr, &inferencev1alpha1.Pipeline{}).
		WithValidator(Validator{Reader: mgr.GetAPIReader(), Pipelines: mgr.GetClient()}).
		Complete()
}

// Defaulter fills in a Pipeline's defaults.
type Defaulter struct{}

// Default applies Default. On an update, the defaults the old pipeline holds are derived again where the step they
// came from changed (FollowDefaults): adding a GPU to a one-replica step switches it to Recreate, as on creation.
func (Defaulter) Default(ctx context.Context, p *inferencev1alpha1.Pipeline) error {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		var old inferencev1alpha1.Pipeline
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return fmt.Errorf("decoding the old pipeline: %w", err)
		}
		KeepStepNames(&old, p)
		FollowDefaults(&old, p)
	}
	Default(p)
	return nil
}

// Validator rejects invalid Pipelines and warns about steps pinned to missing nodes.
type Validator struct {
	// Reader looks nodes up for the warnings, and the cache's local-volume StorageClass up.
	Reader client.Reader
	// Pipelines lists the namespace's pipelines for the name-clash check: the manager's cache, since every creation
	// asks (a thousand pipelines created at once would otherwise list the namespace a thousand times from the
	// apiserver). A pipeline the cache has not seen yet may slip through; the controller then reports NameTaken and
	// writes nothing over it. Nil uses Reader.
	Pipelines client.Reader
}

var groupKind = inferencev1alpha1.GroupVersion.WithKind("Pipeline").GroupKind()

// ValidateCreate checks a new pipeline.
func (v Validator) ValidateCreate(ctx context.Context, p *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	errs := Validate(p)
	clashes, err := v.clashes(ctx, p)
	if err != nil {
		return nil, err
	}
	class, warned := localVolumeClass(ctx, v.Reader, nil, p)
	if errs = append(append(errs, clashes...), class...); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, p.Name, errs)
	}
	return append(v.warnings(ctx, p), warned...), nil
}

// ValidateUpdate checks a changed pipeline; its storage may not change. An update that leaves the spec as it was
// (the controller adding or removing its finalizer, labels) or of a pipeline being deleted is always allowed: a
// pipeline admitted under older rules, or while the webhook was down, must still be deletable. The old spec is
// compared with its defaults, which the defaulter has just added to the new one if the old never had them.
func (v Validator) ValidateUpdate(ctx context.Context, old, p *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	oldDefaulted, curDefaulted := old.DeepCopy(), p.DeepCopy()
	Default(oldDefaulted)
	Default(curDefaulted)
	if p.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldDefaulted.Spec, curDefaulted.Spec) {
		return nil, nil
	}
	errs := append(Validate(p), ValidateUpdate(old, p)...)
	clashes, err := v.clashes(ctx, p)
	if err != nil {
		return nil, err
	}
	class, warned := localVolumeClass(ctx, v.Reader, old, p)
	if errs = append(append(errs, clashes...), class...); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, p.Name, errs)
	}
	return append(v.warnings(ctx, p), warned...), nil
}

// clashes finds the steps whose object names another pipeline of the namespace already uses.
func (v Validator) clashes(ctx context.Context, p *inferencev1alpha1.Pipeline) (field.ErrorList, error) {
	r := v.Pipelines
	if r == nil {
		r = v.Reader
	}
	if r == nil {
		return nil, nil
	}
	var list inferencev1alpha1.PipelineList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the namespace's pipelines to check step names: %w", err)
	}
	return NameClashes(p, list.Items), nil
}

// ValidateDelete allows every deletion.
func (Validator) ValidateDelete(context.Context, *inferencev1alpha1.Pipeline) (admission.Warnings, error) {
	return nil, nil
}

// warnings says which pinned nodes do not exist now: the pipeline is admitted (the node may join later) and its
// status will say the step waits for it. It says too which steps fetch their model at every start (uncachedSteps). A node is found as pinning finds it: by its kubernetes.io/hostname label.
func (v Validator) warnings(ctx context.Context, p *inferencev1alpha1.Pipeline) admission.Warnings {
	out := uncachedSteps(p)
	if v.Reader == nil {
		return out
	}
	var locations []string
	for _, s := range p.Spec.Steps {
		if s.Location != "" {
			locations = append(locations, s.Location)
		}
	}
	sel, err := pipelinespec.PinnedNodesSelector(locations)
	if err != nil || sel == nil {
		return out
	}
	var nodes corev1.NodeList
	if err := v.Reader.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return append(out, fmt.Sprintf("the pinned nodes could not be checked: %v", err))
	}
	found := pipelinespec.ByHostname(nodes.Items)
	for i, s := range p.Spec.Steps {
		if _, ok := found[s.Location]; s.Location != "" && !ok {
			out = append(out, fmt.Sprintf("spec.steps[%d].location: no node has %s=%s (yet); the step will wait for it",
				i, pipelinespec.HostnameLabel, s.Location))
		}
	}
	return out
}

// uncachedSteps says which steps have no cache to start from: with the cache on local volumes, a step without a
// location has no node to keep a claim on, so its pods fetch their model at every start.
func uncachedSteps(p *inferencev1alpha1.Pipeline) admission.Warnings {
	if c := p.Spec.ModelStorage.Cache; c == nil || c.LocalVolume == nil {
		return nil
	}
	var out admission.Warnings
	for i, s := range p.Spec.Steps {
		if s.Location == "" && pipelinespec.SourceOf(s.Model) == pipelinespec.ModelFetched {
			out = append(out, fmt.Sprintf("spec.steps[%d].location: unset, so the step has no node to keep its model's cache "+
				"on (modelStorage.cache.localVolume): each of its pods fetches the model when it starts", i))
		}
	}
	return out
}
