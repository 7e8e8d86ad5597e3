// Package daemonset is the controller behind Keelson's DaemonSet: one pod per eligible node, rolled out node by
// node. Reconcile asks the expectations whether the cache has seen its last writes, then reads the DaemonSet, the
// nodes and its pods from the cache, asks the pure planner (rollout.go) what to create and delete, does it in
// slow-start batches guarded by expectations, and writes the status once.
package daemonset

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/expectations"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

// Failed pods on a node are replaced after a backoff that doubles from failedPodBackoffInitial up to
// failedPodBackoffMax, as apps/v1 does, so a pod that fails at once does not cause a create/delete hot loop.
const (
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
)

// Reconciler reconciles Keelson DaemonSets.
type Reconciler struct {
	client.Client
	// Recorder emits events on DaemonSets.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil): it dates failures for their back-off, paces status writes and stamps
	// the in-place readiness gate.
	Now func() time.Time

	// APIReader reads pods live, past the cache, on a DaemonSet's first pass in this process (see seedExpectations)
	// and before adopting a pod; SetupWithManager sets the manager's.
	APIReader client.Reader

	initOnce     sync.Once
	expectations *expectations.Expectations
	backoff      *failureBackoff
	pacer        *pacing.Pacer
	seeded       *seenSet
	written      statuswrite.Written[*daemonsetv1alpha1.DaemonSetStatus]
	vanished     *vanishedPods
	// stores are the pod and node informers' indexers (cachereads.go), set by SetupWithManager.
	stores informerStores
	// writesPerPass caps the pod writes a pass makes in all (writesPerPassFor the client budget), set by
	// SetupWithManager; zero is maxWritesPerPass.
	writesPerPass int
}

// RBAC of the daemonset-controller (make manifests turns these into its ClusterRole).
// +kubebuilder:rbac:groups=daemonset.keelson.dev,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=daemonset.keelson.dev,resources=daemonsets/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete

func (r *Reconciler) init() {
	r.initOnce.Do(func() {
		r.expectations = expectations.New()
		r.backoff = newFailureBackoff(failedPodBackoffInitial, failedPodBackoffMax)
		r.pacer = pacing.New(statusInterval)
		r.seeded = newSeenSet()
		r.vanished = newVanishedPods()
	})
}

// passWrites is the most pod writes one pass makes in all.
func (r *Reconciler) passWrites() int {
	if r.writesPerPass > 0 {
		return r.writesPerPass
	}
	return maxWritesPerPass
}

// now reads the clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// liveReader reads past the cache: APIReader, or the client for a reconciler set up without a manager.
func (r *Reconciler) liveReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// forget drops what the reconciler remembers of a DaemonSet that is gone, by its namespace/name alone: the one way
// every path that finds it gone (its deletion seen, a NotFound read or write) forgets it.
func (r *Reconciler) forget(key string) {
	r.expectations.Forget(key)
	r.backoff.forget(key + "/")
	r.pacer.Forget(key)
	r.seeded.forget(key)
	r.written.Forget(key)
	r.vanished.forget(key)
}

// conflictRequeue is how soon a pass whose write met a conflict (a status write, an adoption) looks again: a
// conflict is normal, not an error to back off from.
const conflictRequeue = time.Second
