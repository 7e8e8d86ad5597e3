package pipeline

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/cachelabels"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "pipeline"

// locationIndex indexes pipelines by the nodes their steps are pinned to.
const locationIndex = "inference.keelson.dev/location"

// CacheOptions narrows the cache to the pipeline controller's own children (label-filtered Deployments, Services,
// claims, volumes and pods), and keeps nodes without their image lists.
func CacheOptions() cache.Options {
	sel := cachelabels.Has(inferencev1alpha1.PipelineLabel)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:            {Label: sel},
			&corev1.Service{}:               {Label: sel},
			&corev1.PersistentVolumeClaim{}: {Label: sel},
			&corev1.PersistentVolume{}:      {Label: sel},
			&corev1.Pod{}:                   {Label: sel},
			&corev1.Node{}:                  {Transform: slimNode},
		},
	}
}

// slimNode keeps what the step checks read: name, labels, schedulability and allocatable resources.
func slimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields, n.Annotations = nil, nil
		n.Status.Images, n.Status.VolumesInUse, n.Status.VolumesAttached = nil, nil, nil
	}
	return obj, nil
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		// Not the manager's recorder, which folds a new cause under the same reason into the old one's series
		// (recorder.Writer).
		w, err := recorder.ForManager(mgr, ControllerName+"-controller")
		if err != nil {
			return err
		}
		r.Recorder = w
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &inferencev1alpha1.Pipeline{}, locationIndex,
		func(obj client.Object) []string {
			var out []string
			for _, s := range obj.(*inferencev1alpha1.Pipeline).Spec.Steps {
				if s.Location != "" {
					out = append(out, s.Location)
				}
			}
			return out
		}); err != nil {
		return fmt.Errorf("indexing pipelines by location: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&inferencev1alpha1.Pipeline{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(byLabels)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(byLabels)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.pipelinesOn), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
				old, okOld := e.ObjectOld.(*corev1.Node)
				updated, okNew := e.ObjectNew.(*corev1.Node)
				return !okOld || !okNew || nodeReadChanged(old, updated)
			}})).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.pipelineOfAutoscaler)).
		Complete(r)
}

// byLabels maps a pod or a volume to its pipeline through the labels the controller put on it.
func byLabels(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[inferencev1alpha1.PipelineLabel]
	ns := obj.GetNamespace()
	if ns == "" {
		ns = obj.GetLabels()[NamespaceLabel]
	}
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// pipelinesOn maps a node to the pipelines with a step pinned to it: by its kubernetes.io/hostname label, which is
// what a step's location names.
func (r *Reconciler) pipelinesOn(ctx context.Context, obj client.Object) []reconcile.Request {
	host, ok := obj.GetLabels()[pipelinespec.HostnameLabel]
	if !ok {
		return nil
	}
	var list inferencev1alpha1.PipelineList
	if err := r.List(ctx, &list, client.MatchingFields{locationIndex: host}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}
