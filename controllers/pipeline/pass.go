package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// claimPoll is how often a pipeline on the user's own claim looks again while the claim is not Bound: no watch
// sees that claim, since the cache holds only the controller's own objects.
const claimPoll = 5 * time.Second

// nameTakenPoll is how often a pipeline whose child name is taken by an object of someone else's looks again: that
// object carries no label of ours, so no watch sees it go.
const nameTakenPoll = 30 * time.Second

// Reconcile is one pass over one Pipeline, in the steps the three controllers share (docs/architecture.md): fetch
// it, start from the status last written, finalize it when it is being deleted (ordered deletion), hold it with the
// finalizer, reconcile it (read, decide, act, derive the status), and finish (write the status, tell what changed,
// say when to look again).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &inferencev1alpha1.Pipeline{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return passerr.Gone(err, func() { r.forget(req.String()) })
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("pipeline", klog.KObj(p)))
	// The status this process last wrote is newer than a cache that has not caught up with it: a pass starts from
	// that one and compares with it (see controllers/internal/statuswrite).
	p.Status = *r.written.Current(p, &p.Status)
	if p.DeletionTimestamp != nil {
		return r.finalize(ctx, p)
	}
	if err := r.addFinalizer(ctx, p); err != nil {
		return passResult(fmt.Errorf("adding the finalizer: %w", err))
	}
	return r.finish(ctx, req, p, r.reconcile(ctx, p))
}

// outcome is what a pass did: when to look again, the status it derived (nil: none to write), the events beside
// the status's own transitions (hand-backs), and the pass's error.
type outcome struct {
	result ctrl.Result
	status *inferencev1alpha1.PipelineStatus
	events []event
	err    error
}

// reconcile does the work and returns its outcome: it reads the steps' autoscalers and what they hand back, wires
// the steps (pipelinespec.Wire, pure), writes the storage and the steps' children (syncChildren), observes them
// (observe) and derives the status (computeStatus, pure).
func (r *Reconciler) reconcile(ctx context.Context, p *inferencev1alpha1.Pipeline) outcome {
	allAutoscalers, err := r.stepAutoscalers(ctx, p)
	if err != nil {
		// Without knowing which steps an autoscaler scales, an apply could undo an autoscaler's replicas.
		return outcome{err: err}
	}
	autoscalers := firstAutoscalers(allAutoscalers)
	kept, handBackEvents, err := r.handBacks(ctx, p, autoscalers)
	if err != nil {
		return outcome{err: err}
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
		return outcome{err: errors.Join(append(errs, fmt.Errorf("reading the pipeline's objects: %w", err))...)}
	}
	status := computeStatus(p, p.Status, o, w)
	return outcome{result: lookAgain(p, o), status: &status, events: handBackEvents, err: errors.Join(errs...)}
}

// lookAgain is when a pass that met no error looks again although no watch will wake it: while the user's own
// claim is not Bound, while a child's name is taken by someone else's object, while a step's pods wait.
func lookAgain(p *inferencev1alpha1.Pipeline, o observed) ctrl.Result {
	switch {
	case p.Spec.ModelStorage.Type == inferencev1alpha1.StoragePVC && (o.pvc == nil || o.pvc.Status.Phase != corev1.ClaimBound):
		return ctrl.Result{RequeueAfter: claimPoll}
	case nameTaken(o.failures):
		return ctrl.Result{RequeueAfter: nameTakenPoll}
	case waiting(o.pods, o.deployments):
		return ctrl.Result{RequeueAfter: eventPoll}
	}
	return ctrl.Result{}
}

// finish ends a pass: it writes the status the pass derived, tells its transitions (and the hand-backs) once
// written, and says when to look again.
func (r *Reconciler) finish(ctx context.Context, req ctrl.Request, p *inferencev1alpha1.Pipeline, out outcome) (ctrl.Result, error) {
	errs := []error{out.err}
	if out.status != nil && !equality.Semantic.DeepEqual(p.Status, *out.status) {
		old := p.Status
		switch err := r.writeStatus(ctx, p, *out.status); {
		case apierrors.IsNotFound(err):
			// Deleted since it was read (without the finalizer: it was never added): nothing to look at again.
			r.forget(req.String())
			return ctrl.Result{}, nil
		case err != nil:
			errs = append(errs, err)
		default:
			// Only a written status is an event: a failed write is retried, and its transition told then.
			r.recordTransitions(ctx, p, old, *out.status, out.events...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return passResult(err)
	}
	return out.result, nil
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
