package pipeline

import (
	"context"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// eventPoll is how often a pipeline whose step waits for something only events tell (a pod stuck in
// ContainerCreating, or a step whose pods run without being ready) looks at those events again: the controller
// watches no events.
const eventPoll = 10 * time.Second

// eventReads picks, per step, the pods whose events the step's status would use: its first pod stuck in
// ContainerCreating (volumeProblem), and, while the step lacks available replicas, its first pod that has run for
// readinessGrace without being ready (readinessProblem). At most two reads per step, whatever its replicas.
func eventReads(pods map[string][]corev1.Pod, deployments map[string]*appsv1.Deployment, now time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	steps := slices.Sorted(maps.Keys(pods))
	for _, step := range steps {
		if p := firstPod(pods[step], stuckCreating); p != nil {
			out = append(out, p)
		}
		if short(deployments[step]) {
			if p := firstPod(pods[step], func(p corev1.Pod) bool { return unready(p, now) }); p != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// short reports whether a step's Deployment has fewer available replicas than it asks for: only then does what its
// readiness check answers say anything the status uses.
func short(d *appsv1.Deployment) bool {
	return d != nil && d.Status.AvailableReplicas < ptr.Deref(d.Spec.Replicas, 1)
}

// waiting reports whether a step waits for something only events tell, now or once readinessGrace has passed: the
// pass looks again after eventPoll.
func waiting(pods map[string][]corev1.Pod, deployments map[string]*appsv1.Deployment) bool {
	for step, list := range pods {
		lacking := short(deployments[step])
		for _, p := range list {
			if stuckCreating(p) || lacking && !notReadySince(p).IsZero() {
				return true
			}
		}
	}
	return false
}

// podEvents reads the events of the pods eventReads picks, one list per pod, from the API server's watch cache
// (resourceVersion 0: no read of etcd; events are not in the controller's cache, and must not be: it would hold every
// event of the cluster). None in steady state or without an APIReader. Events are best effort: a failed read is
// logged and leaves the status without what that pod's events would have said.
func (r *Reconciler) podEvents(ctx context.Context, namespace string, pods []*corev1.Pod) []corev1.Event {
	if r.APIReader == nil {
		return nil
	}
	var out []corev1.Event
	for _, p := range pods {
		var list corev1.EventList
		if err := r.APIReader.List(ctx, &list, client.InNamespace(namespace),
			client.MatchingFields{"involvedObject.uid": string(p.UID)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
			log.FromContext(ctx).Info("Could not read a pod's events", "pod", p.Name, "error", err.Error())
			continue
		}
		out = append(out, list.Items...)
	}
	return out
}
