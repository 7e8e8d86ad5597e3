package pipeline

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eventPoll is how often a pipeline with a pod that waits (stuck in ContainerCreating, or running and not ready)
// looks at that pod's events again: the controller watches no events, and why a volume cannot be mounted or what a
// readiness check answers shows nowhere else.
const eventPoll = 10 * time.Second

// podEvents reads the events that say why pods wait: those of every pod stuck in ContainerCreating (its volume
// events), and of the first pod of each step that runs without being ready (its readiness check's answers; one pod
// is enough to say what the check answers, and a step of many replicas starting at once costs one read). They are
// read from the API (events are not cached, and must not be: a cache of them would hold every event of the
// cluster), one list per pod; none in steady state or without an APIReader.
func (r *Reconciler) podEvents(ctx context.Context, namespace string, pods []corev1.Pod, now time.Time) ([]corev1.Event, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	var out []corev1.Event
	unreadyStep := map[string]bool{}
	for _, p := range pods {
		switch step := p.Labels[StepLabel]; {
		case stuckCreating(p):
		case unready(p, now) && !unreadyStep[step]:
			unreadyStep[step] = true
		default:
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

// anyWaiting reports whether a step's pod waits in ContainerCreating, or runs without being ready: the pass looks
// again after eventPoll, as what it waits for shows only in events, which no watch brings.
func anyWaiting(pods map[string][]corev1.Pod) bool {
	for _, list := range pods {
		for _, p := range list {
			if stuckCreating(p) || !notReadySince(p).IsZero() {
				return true
			}
		}
	}
	return false
}
