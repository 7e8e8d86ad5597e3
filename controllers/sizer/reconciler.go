// Package sizer is the controller behind Keelson's WorkloadSizer. Reconcile reads the sizer and its target,
// creates the target when asked to, applies only the fields the sizer owns (replicas, the resources and runtime
// environment it controls) with server-side apply, hands over the fields it stops applying, resizes pods in place
// when asked, keeps a disruption budget that cannot block drains by accident, exposes the target, reports what it
// leaves alone (objects and fields of others, a second sizer, an autoscaler), and writes the status once.
package sizer

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

// maxPodsListed caps status.pods.
const maxPodsListed = 100

// retryInterval is how soon a sizer blocked by an object it cannot watch (a user's Service or Ingress of the name
// it would use: its cache holds only its own) looks again.
const retryInterval = time.Minute

// Reconciler reconciles WorkloadSizers.
type Reconciler struct {
	client.Client
	// APIReader reads from the apiserver, past the cache: pods for in-place resizes (the cache holds only their
	// metadata), objects the label-filtered cache cannot see, and managedFields before a hand-over.
	APIReader client.Reader
	// Recorder emits events on WorkloadSizers.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil): it paces status writes, dates in-place resizes and forced writes.
	Now func() time.Time
	// Discovery tells whether the apiserver resizes pods in place; nil assumes it does.
	Discovery discovery.DiscoveryInterface
	// ResizeDeferredTimeout and ResizeInProgressTimeout bound an in-place resize before the sizer falls back to a
	// rolling update; zero means DefaultResizeDeferredTimeout and DefaultResizeInProgressTimeout.
	ResizeDeferredTimeout, ResizeInProgressTimeout time.Duration
	resize                                         resizeSupport
	vpa                                            vpaPresence
	// pacer spaces out status writes whose only news is counts (see statusUrgent).
	pacer *pacing.Pacer

	mu sync.Mutex
	// applied is, per sizer, the fields of its last apply to its target in this process: the cache may not show
	// them yet, and a field the sizer owns must be handed over, not dropped, when it stops applying it.
	applied map[string]fieldSet
	// fights are, per sizer, its forced writes that had to take fields back (see fight.go).
	fights map[string]fightLog
	// evictions are, per sizer, the pods it evicted because their in-place resize was infeasible (evict.go).
	evictions map[string]infeasibleEvictions
	// unownedEnv is, per sizer, the runtime variables nobody owned in a version of its workload.
	unownedEnv map[string]envCheck
	// written is, per sizer, the status this process last wrote.
	written statuswrite.Written[*sizerv1alpha1.WorkloadSizerStatus]
}

// RBAC of the workload-sizer (make manifests turns these into its ClusterRole).
// +kubebuilder:rbac:groups=sizer.keelson.dev,resources=workloadsizers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sizer.keelson.dev,resources=workloadsizers/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=update
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalers,verbs=list

// pass is one reconcile's working state: the sizer, the status being computed, and what the pass found.
type pass struct {
	wls    *sizerv1alpha1.WorkloadSizer
	status *sizerv1alpha1.WorkloadSizerStatus
	// conflicts are what the sizer left alone instead of writing (the Conflict condition).
	conflicts []conflict
	// problem is the workload's own report that it cannot reach its size.
	problem *rolloutProblem
	// workloadReplicas are the workload's own replicas (spec.replicas), once read: with spec.size unset, Ready
	// waits for them.
	workloadReplicas *int32
	// retryLater: blocked by something the sizer does not watch; look again after retryInterval.
	retryLater bool
	// recheck: in-place resizes are under way; look at the pods again after this long.
	recheck time.Duration
	// createdTarget: this pass created the target (an event says so).
	createdTarget bool
	// autoscaled: an autoscaler scales the workload, so its replicas, not spec.size, are the ones to budget for.
	autoscaled bool
}

// conflictRequeue is how soon a pass whose write raced another writer (optimistic lock) looks again.
const conflictRequeue = time.Second

// passResult turns a pass's error into its result, looking at each error the pass joined. Creates refused because
// the namespace is being deleted are nothing to retry: the namespace's deletion removes the sizer too, and until
// then every retry would be refused and logged again. What is left, if only writes that raced another writer
// (optimistic lock; not a field owned by another manager, which the status reports), is a short requeue, not an
// error.
func passResult(err error) (ctrl.Result, error) {
	rest := passerr.Remaining(err)
	switch {
	case len(rest) == 0:
		return ctrl.Result{}, nil
	case passerr.All(rest, func(e error) bool { return apierrors.IsConflict(e) && conflictMessage(e) == "" }):
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	return ctrl.Result{}, err
}

// now reads the clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// forget drops what the process remembers of a sizer that is gone.
func (r *Reconciler) forget(key string) {
	r.pacer.Forget(key)
	r.written.Forget(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.applied, key)
	delete(r.fights, key)
	delete(r.evictions, key)
	delete(r.unownedEnv, key)
}
