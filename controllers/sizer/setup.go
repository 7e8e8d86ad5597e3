package sizer

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/cachelabels"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "workloadsizer"

// CacheOptions narrows the cache: the Services and Ingresses it holds are only the sizer's own; every
// PodDisruptionBudget is held (a user's budget over a target's pods must be seen, and budgets are few), as is every
// HorizontalPodAutoscaler (one on a target must be seen); pods are watched as metadata only (names and labels for
// the status).
func CacheOptions() cache.Options {
	sel := cachelabels.Has(sizerv1alpha1.NameLabel)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Service{}:       {Label: sel},
			&networkingv1.Ingress{}: {Label: sel},
			// The sizer reads its own managedFields entries on targets (which fields it owns), so targets keep
			// those; everything else is stripped.
			&appsv1.Deployment{}:  {Transform: keepSizerManagedFields},
			&appsv1.StatefulSet{}: {Transform: keepSizerManagedFields},
			podMetadata():         {Transform: slimPod},
		},
	}
}

// keepSizerManagedFields strips every managedFields entry but the sizers' own (FieldOwner and the per-sizer
// managers under it).
func keepSizerManagedFields(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		var keep []metav1.ManagedFieldsEntry
		for _, e := range o.GetManagedFields() {
			if e.Manager == FieldOwner || strings.HasPrefix(e.Manager, FieldOwner+"/") {
				keep = append(keep, e)
			}
		}
		o.SetManagedFields(keep)
	}
	return obj, nil
}

// podMetadata is the sizer's view of pods: metadata only.
func podMetadata() *metav1.PartialObjectMetadata {
	pod := &metav1.PartialObjectMetadata{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return pod
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
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
	if r.Discovery == nil {
		d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("a discovery client: %w", err)
		}
		r.Discovery = d
	}
	r.pacer = pacing.New(statusInterval)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sizerv1alpha1.WorkloadSizer{}, targetIndex,
		func(obj client.Object) []string {
			ref := obj.(*sizerv1alpha1.WorkloadSizer).Target()
			return []string{targetKey(ref.Kind, ref.Name)}
		}); err != nil {
		return fmt.Errorf("indexing sizers by target: %w", err)
	}
	pod := podMetadata()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&sizerv1alpha1.WorkloadSizer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&sizerv1alpha1.WorkloadSizer{}, handler.EnqueueRequestsFromMapFunc(r.peersOf),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.sizersOf("Deployment"))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.sizersOf("StatefulSet"))).
		Watches(pod, handler.EnqueueRequestsFromMapFunc(r.sizersSelecting), builder.OnlyMetadata,
			builder.WithPredicates(podSetChanged())).
		Watches(&policyv1.PodDisruptionBudget{}, handler.EnqueueRequestsFromMapFunc(r.sizersOfBudget)).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.sizersOfAutoscaler)).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.Ingress{}).
		Complete(r)
}

// peersOf maps a sizer that comes or goes to the other sizers of its workload: one that stood down because an older
// one sized the workload takes over when that one is deleted.
func (r *Reconciler) peersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	ref := obj.(*sizerv1alpha1.WorkloadSizer).Target()
	var peers []reconcile.Request
	for _, req := range r.sizersOf(ref.Kind)(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: obj.GetNamespace(), Name: ref.Name}}) {
		if req.Name != obj.GetName() {
			peers = append(peers, req)
		}
	}
	return peers
}

// sizersOfBudget maps a PodDisruptionBudget to its sizer, or, for a budget of someone else's, to the namespace's
// sizers that keep a budget (theirs may now overlap it, or no longer).
func (r *Reconciler) sizersOfBudget(ctx context.Context, obj client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == "WorkloadSizer" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}}
	}
	var list sizerv1alpha1.WorkloadSizerList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var match []sizerv1alpha1.WorkloadSizer
	for _, w := range list.Items {
		if w.Spec.Disruption != nil {
			match = append(match, w)
		}
	}
	return requestsFor(match)
}

// sizersOfAutoscaler maps a HorizontalPodAutoscaler to the sizers of the workload it scales.
func (r *Reconciler) sizersOfAutoscaler(ctx context.Context, obj client.Object) []reconcile.Request {
	hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	t := hpa.Spec.ScaleTargetRef
	if t.Kind == "WorkloadSizer" {
		// An autoscaler of the sizer itself: the sizer says when it cannot work (spec.size unset).
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: t.Name}}}
	}
	return r.sizersOf(t.Kind)(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: obj.GetNamespace(), Name: t.Name}})
}

// podSetChanged passes pod creations and deletions and label changes: what changes a sizer's list of pods.
func podSetChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	}}
}
