package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A pass reads every node, and every pod of its DaemonSet. At thousands of nodes, the copies a typed List makes of
// them (a struct per object even with UnsafeDisableDeepCopy, a whole object without it) were most of what a pass
// allocated: 28 GB while one DaemonSet converged on 10,000 nodes, and a heap that outgrew the chart's memory limit.
// So a pass reads the informers' own objects through their indexers, as kube-controller-manager's listers do, and
// never writes into them: a write goes to a deep copy (execute, adoption). A reconciler built without a manager (the
// unit tests' fake client) has no informers and lists instead.

// podOwnerIndex indexes the pod informer's objects by the UID of their controlling Keelson DaemonSet (ownerOf).
const podOwnerIndex = "daemonset.keelson.dev/pod-owner"

// informerStores are the pod and node informers' indexers; nil ones are read through the client.
type informerStores struct {
	pods, nodes toolscache.Indexer
}

// indexer is what controller-runtime's informers are underneath (client-go's shared index informer); its Informer
// interface does not offer the indexer itself.
type indexer interface{ GetIndexer() toolscache.Indexer }

// storesOf indexes the cache's pod informer by owner and returns the two informers' indexers, before the cache starts.
func storesOf(ctx context.Context, c cache.Cache) (informerStores, error) {
	var s informerStores
	pods, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return s, fmt.Errorf("the pod informer: %w", err)
	}
	if err := pods.AddIndexers(toolscache.Indexers{podOwnerIndex: func(obj any) ([]string, error) {
		if o, ok := obj.(client.Object); ok {
			return ownerOf(o), nil
		}
		return nil, nil
	}}); err != nil {
		return s, fmt.Errorf("indexing pods by owner: %w", err)
	}
	nodes, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return s, fmt.Errorf("the node informer: %w", err)
	}
	if i, ok := pods.(indexer); ok {
		s.pods = i.GetIndexer()
	}
	if i, ok := nodes.(indexer); ok {
		s.nodes = i.GetIndexer()
	}
	return s, nil
}

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
