package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A pass reads every node, and every pod of its DaemonSet. At thousands of nodes, the copies a typed List makes of
// them (a struct per object even with UnsafeDisableDeepCopy, a whole object without it) were most of what a pass
// allocated: 28 GB while one DaemonSet converged on 10,000 nodes, and a heap that outgrew the chart's memory limit.
// So a pass reads the informers' own objects through their indexers, as kube-controller-manager's listers do, and
// never writes into them: a write goes to a deep copy (execute, adoption). A reconciler built without a manager (the
// unit tests' fake client) has no informers and lists instead.

// ownedPods returns the pods ds controls, those being deleted included: the cache's own objects, to read only.
func (r *Reconciler) ownedPods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) ([]*corev1.Pod, error) {
	if r.stores.pods != nil {
		objs, err := r.stores.pods.ByIndex(podOwnerIndex, string(ds.UID))
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok && pod.Namespace == ds.Namespace {
				pods = append(pods, pod)
			}
		}
		return pods, nil
	}
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{ownerIndex: string(ds.UID)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// allNodes returns every node: the cache's own objects, to read only.
func (r *Reconciler) allNodes(ctx context.Context) ([]*corev1.Node, error) {
	if r.stores.nodes != nil {
		objs := r.stores.nodes.List()
		nodes := make([]*corev1.Node, 0, len(objs))
		for _, o := range objs {
			if n, ok := o.(*corev1.Node); ok {
				nodes = append(nodes, n)
			}
		}
		return nodes, nil
	}
	var list corev1.NodeList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	nodes := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		nodes = append(nodes, &list.Items[i])
	}
	return nodes, nil
}
