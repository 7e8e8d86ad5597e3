// Package pipeline is the controller behind Keelson's Pipeline: model storage (a read-only NFS PersistentVolume and
// claim, or an existing claim), and one Deployment and Service per step, pinned to its node and wired to its next
// steps. Reconcile applies each child only when it differs from the spec (a changed spec, or drift of a step's
// Deployment or Service), never over an object that is not the pipeline's, and writes a status that says which step
// waits for what and why, with events for its transitions. Deletion is ordered by a finalizer: steps, then the
// claim, then the volume, each decided from the API.
package pipeline

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

const (
	// FieldOwner is the pipeline controller's server-side apply field manager.
	FieldOwner = "keelson-pipeline-controller"
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

// forget drops all this process remembers of a pipeline that is gone: the status it last wrote and the causes its
// events told. Its steps' clocks are dropped by UID once the deletion is seen (metrics.go).
func (r *Reconciler) forget(key string) {
	r.written.Forget(key)
	r.toldMu.Lock()
	delete(r.told, key)
	r.toldMu.Unlock()
}
