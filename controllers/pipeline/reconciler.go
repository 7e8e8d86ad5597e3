// Package pipeline is the controller behind Keelson's Pipeline: model storage (a read-only NFS PersistentVolume and
// claim, or an existing claim), and one Deployment and Service per step, pinned to its node and wired to its next
// steps. Reconcile applies each child only when it differs from the spec (a changed spec, or drift of a step's
// Deployment or Service), never over an object that is not the pipeline's, and writes a status that says which step
// waits for what and why, with events for its transitions. Deletion is ordered by a finalizer: steps, then the
// claim, then the volume, each decided from the API.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

const (
	// FieldOwner is the pipeline controller's server-side apply field manager.
	FieldOwner = "keelson-pipeline-controller"
	// NamespaceLabel maps the cluster-scoped PersistentVolume back to its pipeline's namespace.
	NamespaceLabel = "inference.keelson.dev/namespace"
	// deletionPoll is how often an ordered deletion checks that the previous stage is gone.
	deletionPoll = time.Second
)

// Reconciler reconciles Pipelines.
type Reconciler struct {
	client.Client
	// APIReader reads what the cache does not hold or may not hold yet: the user's own claim of a type-pvc pipeline
	// and objects of a child's name that are not the controller's (the cache keeps only the controller's labelled
	// objects), and what a deletion must not get wrong (is the volume gone, or was it never seen yet).
	// Nil reads through Client.
	APIReader client.Reader
	// Recorder emits events on Pipelines: phase changes and step failures. SetupWithManager sets it when nil.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil): it dates a pass's observations (how recent a container's exit is, how
	// long a pod has not been ready).
	Now func() time.Time
	// ModelFetch is how the models of storage cache are fetched into the nodes' caches (the chart sets it, through
	// ModelFetchFromEnv).
	ModelFetch ModelFetch

	// written is, per pipeline, the status this process last wrote.
	written statuswrite.Written[*inferencev1alpha1.PipelineStatus]
	// told is, per pipeline (by namespace/name), the causes its unschedulable steps' events told (toldOf). A pass
	// uses its pipeline's alone, and no two passes of one pipeline run at once: toldMu guards the map of them.
	told   map[string]*pipelineTold
	toldMu sync.Mutex
}

// now reads the clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// reader is the uncached reader, or the client when there is none.
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// claimPoll is how often a pipeline on the user's own claim looks again while the claim is not Bound: no watch
// sees that claim, since the cache holds only the controller's own objects.
const claimPoll = 5 * time.Second

// nameTakenPoll is how often a pipeline whose child name is taken by an object of someone else's looks again: that
// object carries no label of ours, so no watch sees it go.
const nameTakenPoll = 30 * time.Second

// RBAC of the pipeline-controller (make manifests turns these into its ClusterRole).
// +kubebuilder:rbac:groups=inference.keelson.dev,resources=pipelines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=inference.keelson.dev,resources=pipelines/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get

// Reconcile brings one pipeline's storage and steps in line with its spec and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &inferencev1alpha1.Pipeline{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("pipeline", klog.KObj(p)))
	// The status this process last wrote is newer than a cache that has not caught up with it: a pass starts from
	// that one and compares with it (see controllers/internal/statuswrite).
	p.Status = *r.written.Current(p, &p.Status)
	if p.DeletionTimestamp != nil {
		return r.finalize(ctx, p)
	}
	if before := p.DeepCopy(); controllerutil.AddFinalizer(p, inferencev1alpha1.Finalizer) {
		if err := r.patchFinalizers(ctx, p, before); err != nil {
			return passResult(fmt.Errorf("adding the finalizer: %w", err))
		}
	}

	allAutoscalers, err := r.stepAutoscalers(ctx, p)
	if err != nil {
		// Without knowing which steps an autoscaler scales, an apply could undo an autoscaler's replicas.
		return passResult(err)
	}
	autoscalers := firstAutoscalers(allAutoscalers)
	kept, handBackEvents, err := r.handBacks(ctx, p, autoscalers)
	if err != nil {
		return passResult(err)
	}
	w, verrs := pipelinespec.Wire(p.Spec.Steps)
	verrs = append(verrs, storageModels(p)...)
	var errs []error
	o := observed{autoscalers: allAutoscalers, now: r.now()}
	if len(verrs) > 0 {
		// Admitted while the webhook was down: say what is wrong; create nothing new.
		o.invalid = verrs.ToAggregate().Error()
	} else {
		var applyErrs []error
		o.failures, o.retrying, applyErrs = r.syncChildren(ctx, p, w, autoscalers, kept)
		errs = append(errs, applyErrs...)
	}
	if err := r.observe(ctx, p, &o); err != nil {
		// A status from partial data would be wrong (a node not read is not a node missing): write none, tell
		// nothing, and look again.
		return passResult(errors.Join(append(errs, fmt.Errorf("reading the pipeline's objects: %w", err))...))
	}
	status := computeStatus(p, p.Status, o, w)
	if !equality.Semantic.DeepEqual(p.Status, status) {
		old := p.Status
		switch err := r.writeStatus(ctx, p, status); {
		case apierrors.IsNotFound(err):
			// Deleted since it was read (without the finalizer: it was never added): nothing to look at again.
			r.forget(req.String())
			return ctrl.Result{}, nil
		case err != nil:
			errs = append(errs, err)
		default:
			// Only a written status is an event: a failed write is retried, and its transition told then.
			r.recordTransitions(ctx, p, old, status, handBackEvents...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return passResult(err)
	}
	if p.Spec.ModelStorage.Type == inferencev1alpha1.StoragePVC && (o.pvc == nil || o.pvc.Status.Phase != corev1.ClaimBound) {
		return ctrl.Result{RequeueAfter: claimPoll}, nil
	}
	if nameTaken(o.failures) {
		return ctrl.Result{RequeueAfter: nameTakenPoll}, nil
	}
	if waiting(o.pods, o.deployments) {
		return ctrl.Result{RequeueAfter: eventPoll}, nil
	}
	return ctrl.Result{}, nil
}

// forget drops all this process remembers of a pipeline that is gone: the status it last wrote and the causes its
// events told. Its steps' clocks are dropped by UID once the deletion is seen (metrics.go).
func (r *Reconciler) forget(key string) {
	r.written.Forget(key)
	r.toldMu.Lock()
	delete(r.told, key)
	r.toldMu.Unlock()
}

// conflictRequeue is how soon a pass that met a conflict (a write or read raced another) looks again.
const conflictRequeue = 100 * time.Millisecond

// passResult turns a pass's errors into its result, looking at each error the pass joined. Creates refused because
// the namespace is being deleted are nothing to retry: the namespace's deletion removes the Pipeline too, and until
// then every retry would be refused and logged again. What is left, if only conflicts (a write that raced another),
// is a short requeue, not an error.
func passResult(err error) (ctrl.Result, error) {
	rest := passerr.Remaining(err)
	switch {
	case len(rest) == 0:
		return ctrl.Result{}, nil
	case passerr.All(rest, apierrors.IsConflict):
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	return ctrl.Result{}, err
}

// observe reads what status is computed from.
func (r *Reconciler) observe(ctx context.Context, p *inferencev1alpha1.Pipeline, o *observed) error {
	o.deployments = map[string]*appsv1.Deployment{}
	o.pods = map[string][]corev1.Pod{}
	if p.Spec.ModelStorage.Type == inferencev1alpha1.StorageNFS {
		var pv corev1.PersistentVolume
		if err := r.Get(ctx, types.NamespacedName{Name: volumeName(ctx, r.Client, p)}, &pv); err == nil {
			o.pv = &pv
		} else if !apierrors.IsNotFound(err) {
			return err
		}
	}
	if p.Spec.ModelStorage.Type != inferencev1alpha1.StorageCache {
		var pvc corev1.PersistentVolumeClaim
		var claims client.Reader = r.Client
		if p.Spec.ModelStorage.Type == inferencev1alpha1.StoragePVC && r.APIReader != nil {
			claims = r.APIReader // the user's claim carries no label of ours: the cache cannot hold it
		}
		if err := claims.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ClaimName(p)}, &pvc); err == nil {
			o.pvc = &pvc
		} else if !apierrors.IsNotFound(err) {
			return err
		}
	}
	var deps appsv1.DeploymentList
	if err := r.List(ctx, &deps, client.InNamespace(p.Namespace), client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name}); err != nil {
		return err
	}
	for i := range deps.Items {
		o.deployments[deps.Items[i].Labels[inferencev1alpha1.StepLabel]] = &deps.Items[i]
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name}); err != nil {
		return err
	}
	// Oldest first, whatever order the cache lists them in: what a step says of its pods (the first one in trouble)
	// is then the same from pass to pass, not a status write and an event each time the order changes.
	slices.SortFunc(pods.Items, olderFirst)
	for _, pod := range pods.Items {
		o.pods[pod.Labels[inferencev1alpha1.StepLabel]] = append(o.pods[pod.Labels[inferencev1alpha1.StepLabel]], pod)
	}
	nodes, err := r.pinnedNodes(ctx, p.Spec.Steps)
	if err != nil {
		return err
	}
	o.nodes = nodes
	o.podEvents = r.podEvents(ctx, p.Namespace, eventReads(o.pods, o.deployments, o.now))
	return nil
}
