package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
