package daemonset

import (
	"context"
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/cachelabels"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "daemonset"

// CacheOptions narrows the manager's cache to what this controller needs: only pods and revisions that carry the
// DaemonSet name label (never the cluster's other pods), and nodes without their image lists and other bulk.
func CacheOptions() cache.Options {
	sel := cachelabels.Has(daemonsetv1alpha1.NameLabel)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                {Label: sel},
			&appsv1.ControllerRevision{}: {Label: sel},
			&corev1.Node{}:               {Transform: slimNode},
		},
	}
}

// slimNode keeps only what eligibility and readiness read: labels, taints, spec.unschedulable and conditions.
// Node objects carry image lists and volume data that would otherwise dominate the cache on large clusters.
func slimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	node.Annotations = nil
	node.Status.Images = nil
	node.Status.VolumesInUse = nil
	node.Status.VolumesAttached = nil
	node.Status.Capacity = nil
	node.Status.Allocatable = nil
	return node, nil
}

// SetupWithManager registers the controller: it watches DaemonSets, the pods and revisions they own, and nodes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.init()
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		// Not the manager's recorder, which folds a new cause under the same reason into the old one's series
		// (recorder.Writer).
		w, err := recorder.ForManager(mgr, ControllerName+"-controller")
		if err != nil {
			return err
		}
		r.Recorder = w
	}
	ctx := context.Background()
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.ControllerRevision{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, ownerIndex, ownerOf); err != nil {
			return fmt.Errorf("indexing %T by owner: %w", obj, err)
		}
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.ControllerRevision{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, orphanIndex, orphanOf); err != nil {
			return fmt.Errorf("indexing orphaned %T: %w", obj, err)
		}
	}
	stores, err := storesOf(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	r.stores = stores
	r.writesPerPass = writesPerPassFor(budgetQPS(mgr.GetConfig()))
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&daemonsetv1alpha1.DaemonSet{}, builder.WithPredicates(specChangedOrStatusLost())).
		Watches(&corev1.Pod{}, &podHandler{r: r}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Node{}, &nodeHandler{r: r}, builder.WithPredicates(nodeChanged())).
		Complete(r)
}

// budgetQPS is the steady request rate a client made from cfg is allowed: its rate limiter's, or client-go's
// default for a QPS of zero; a negative QPS (no limit) reads as unbounded.
func budgetQPS(cfg *rest.Config) float32 {
	switch {
	case cfg.RateLimiter != nil:
		return cfg.RateLimiter.QPS()
	case cfg.QPS == 0:
		return rest.DefaultQPS
	case cfg.QPS < 0:
		return math.MaxFloat32
	}
	return cfg.QPS
}

// specChangedOrStatusLost passes a DaemonSet's update when its generation changed (its spec), or when its status no
// longer stands for its generation (statusLost). This controller's own status writes (up to one a second while a
// DaemonSet changes) wake nothing; a status someone else cleared in place, or wrote with another generation (a
// restore of the status), changes no generation, and no pod, node or revision event would bring it back. An edit
// that keeps observedGeneration is not seen: the controller cannot tell it from its own write without remembering
// every write it made.
func specChangedOrStatusLost() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			ds, ok := e.ObjectNew.(*daemonsetv1alpha1.DaemonSet)
			return !ok || statusLost(ds)
		},
	})
}

// statusLost says whether ds's status does not record the generation ds has: every status this controller writes
// records the generation it was derived from, so a different one was written by someone else or not yet at all.
func statusLost(ds *daemonsetv1alpha1.DaemonSet) bool {
	return ds.Status.ObservedGeneration != ds.Generation
}

// nodeChanged passes node events that can change a DaemonSet's work: creation, deletion, and changes of labels,
// taints, schedulability or readiness. Heartbeats (condition timestamps, images) pass nothing.
func nodeChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldNode, ok1 := e.ObjectOld.(*corev1.Node)
		newNode, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(oldNode.Labels, newNode.Labels) ||
			!equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) ||
			oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
			nodeIsDown(oldNode) != nodeIsDown(newNode)
	}}
}

// podHandler enqueues a pod's controlling DaemonSet and records the pod's creation and deletion with the
// expectations, so the DaemonSet's next pass knows the cache has caught up with its writes.
type podHandler struct{ r *Reconciler }

var _ handler.TypedEventHandler[client.Object, reconcile.Request] = &podHandler{}

// owner is the request of obj's controlling DaemonSet.
func (h *podHandler) owner(obj client.Object) (reconcile.Request, bool) {
	if controllerUID(obj) == "" {
		return reconcile.Request{}, false
	}
	ref := metav1.GetControllerOf(obj) // controllerUID found it
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}, true
}

// claimant is the request of the DaemonSet an orphaned pod is labelled for: it may adopt the pod.
func (h *podHandler) claimant(obj client.Object) (reconcile.Request, bool) {
	names := orphanOf(obj)
	if len(names) == 0 {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: names[0]}}, true
}

// Create observes a creation. Only a controlled pod counts for the expectations: they count the controller's own
// creations. An orphan wakes the DaemonSet it is labelled for, which may adopt it.
func (h *podHandler) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if req, ok := h.owner(e.Object); ok {
		h.r.expectations.CreationObserved(req.String())
		q.Add(req)
	} else if req, ok := h.claimant(e.Object); ok {
		q.Add(req)
	}
}

// Update enqueues the owner when the pod's status or labels change; when the pod changed hands (adopted, released,
// orphaned), the DaemonSets on both sides.
func (h *podHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if req, ok := h.owner(e.ObjectNew); ok {
		if e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil {
			h.r.expectations.DeletionObserved(req.String(), e.ObjectNew.GetUID())
		}
		// An update in place is seen once the pod carries its new revision; an opened readiness gate once it shows.
		h.r.expectations.UpdateObserved(req.String(), e.ObjectNew.GetUID(), e.ObjectNew.GetLabels()[RevisionLabel])
		if pod, ok := e.ObjectNew.(*corev1.Pod); ok {
			h.r.expectations.UpdateObserved(req.String(), pod.UID, gateState(inPlaceGateStatus(pod)))
		}
		q.Add(req)
	} else if req, ok := h.claimant(e.ObjectNew); ok {
		q.Add(req)
	}
	if req, ok := h.owner(e.ObjectOld); ok && controllerUID(e.ObjectOld) != controllerUID(e.ObjectNew) {
		q.Add(req)
	}
}

// Delete observes a deletion. A pod that leaves the cache without having been seen terminating may not be deleted
// at all: relabelled without the DaemonSet name label, it only left the cache's label selector. The next pass
// looks it up live, to release it.
func (h *podHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if req, ok := h.owner(e.Object); ok {
		h.r.expectations.DeletionObserved(req.String(), e.Object.GetUID())
		if e.Object.GetDeletionTimestamp() == nil {
			h.r.vanished.add(req.String(), e.Object.GetName(), e.Object.GetUID())
		}
		q.Add(req)
	}
}

// Generic enqueues the owner.
func (h *podHandler) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if req, ok := h.owner(e.Object); ok {
		q.Add(req)
	}
}
