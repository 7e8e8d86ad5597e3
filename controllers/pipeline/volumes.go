package pipeline

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// volumePoll is how often a pipeline with a pod stuck in ContainerCreating looks at that pod's events again: the
// controller watches no events, and a volume that cannot be mounted shows nowhere else.
const volumePoll = 10 * time.Second

// volumeEvents reads the events of the pods stuck in ContainerCreating, from the API (events are not cached, and
// must not be: a cache of them would hold every event of the cluster), one list per stuck pod; none in steady state
// or without an APIReader.
func (r *Reconciler) volumeEvents(ctx context.Context, namespace string, pods []corev1.Pod) ([]corev1.Event, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	var out []corev1.Event
	for _, p := range pods {
		if !stuckCreating(p) {
			continue
		}
		var list corev1.EventList
		if err := r.APIReader.List(ctx, &list, client.InNamespace(namespace),
			client.MatchingFields{"involvedObject.uid": string(p.UID)}); err != nil {
			return nil, fmt.Errorf("listing the events of pod %s: %w", p.Name, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// anyStuckCreating reports whether a step's pod waits in ContainerCreating.
func anyStuckCreating(pods map[string][]corev1.Pod) bool {
	for _, list := range pods {
		for _, p := range list {
			if stuckCreating(p) {
				return true
			}
		}
	}
	return false
}
