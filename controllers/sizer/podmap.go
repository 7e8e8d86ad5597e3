package sizer

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// podWorkload names the workload a pod belongs to, from its controller reference: a StatefulSet's pods name it,
// and a Deployment's pods name their ReplicaSet, "<deployment>-<pod-template-hash>". ok is false for any other pod.
func podWorkload(pod metav1.Object) (kind, name string, ok bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return "", "", false
	}
	switch ref.Kind {
	case "StatefulSet":
		return "StatefulSet", ref.Name, true
	case "ReplicaSet":
		hash := pod.GetLabels()[appsv1.DefaultDeploymentUniqueLabelKey]
		if deployment, found := strings.CutSuffix(ref.Name, "-"+hash); found && hash != "" {
			return "Deployment", deployment, true
		}
	}
	return "", "", false
}

// sizersSelecting maps a pod to the sizers whose target it belongs to (for the pod names in status). A pod of a
// Deployment or StatefulSet is found through the target index, at the cost of one lookup; any other pod (made by
// hand, or by another controller, yet selected by a target) is matched against every target's selector in the
// namespace, read from the target in the cache rather than from the sizer's status, so that a pod created before
// the sizer's first status write is not missed.
func (r *Reconciler) sizersSelecting(ctx context.Context, obj client.Object) []reconcile.Request {
	if kind, name, ok := podWorkload(obj); ok {
		return r.sizersOf(kind)(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.GetNamespace(), Name: name}})
	}
	var list sizerv1alpha1.WorkloadSizerList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var match []sizerv1alpha1.WorkloadSizer
	for i := range list.Items {
		t, err := getTarget(ctx, r.Client, &list.Items[i])
		if err != nil || t == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(t.selector); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			match = append(match, list.Items[i])
		}
	}
	return requestsFor(match)
}

// slimPod keeps of a pod's metadata what the sizer reads (name, labels, deletion, controller reference) and what
// the informer needs (namespace, UID, resource version). The sizer watches every pod in the cluster, so every
// byte kept is kept once per pod.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	var owners []metav1.OwnerReference
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		owners = []metav1.OwnerReference{*ref}
	}
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		Labels: p.Labels, DeletionTimestamp: p.DeletionTimestamp, OwnerReferences: owners}
	return p, nil
}

// sizersOf maps a Deployment or StatefulSet to the sizers that target it.
func (r *Reconciler) sizersOf(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list sizerv1alpha1.WorkloadSizerList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy,
			client.MatchingFields{targetIndex: targetKey(kind, obj.GetName())}); err != nil {
			return nil
		}
		return requestsFor(list.Items)
	}
}

// requestsFor is a reconcile request for each of the sizers.
func requestsFor(items []sizerv1alpha1.WorkloadSizer) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for _, w := range items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
	}
	return out
}
