package daemonset

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// splitPods separates the pods the planner sees from those being deleted, which it counts per node (no new pod goes
// to a node while its old pod still runs). A terminal pod (Failed or Succeeded) whose deletion was requested counts
// as gone: its containers have stopped, and a finalizer holding it must not keep its node without a pod forever.
func splitPods(owned []*corev1.Pod) (pods []*corev1.Pod, terminating map[string]int) {
	terminating = map[string]int{}
	for _, pod := range owned {
		switch {
		case pod.DeletionTimestamp == nil:
			pods = append(pods, pod)
		case !isTerminal(pod):
			terminating[PodNode(pod)]++
		}
	}
	return pods, terminating
}

// buildViews turns nodes and pods into the planner's view: eligibility per node and the pods on each, sorted by
// name. Pods pinned to nodes that no longer exist get an ineligible view of their own, so they are removed.
func buildViews(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, nodes []*corev1.Node, pods []*corev1.Pod,
	terminating map[string]int, backoff func(string) time.Duration) ([]nodeView, error) {
	var canary labels.Selector
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ru.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.updateStrategy.rollingUpdate.selector: %w", err)
		}
		canary = sel
	}
	spec := template.Spec.DeepCopy()
	spec.Tolerations = withDaemonTolerations(spec.Tolerations, spec.HostNetwork)

	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		byNode[PodNode(pod)] = append(byNode[PodNode(pod)], pod)
	}
	views := make([]nodeView, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		views = append(views, nodeView{
			name:        n.Name,
			eligibility: nodeEligibility(n, spec),
			down:        nodeIsDown(n),
			canary:      canary == nil || canary.Matches(labels.Set(n.Labels)),
			pods:        byNode[n.Name],
			terminating: terminating[n.Name],
			backoff:     backoff(n.Name),
			joined:      n.CreationTimestamp.Time,
		})
	}
	for node, ps := range byNode {
		if !seen[node] {
			views = append(views, nodeView{name: node, pods: ps})
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].name < views[j].name })
	return views, nil
}

// strategyFor resolves the DaemonSet's update strategy against the number of eligible nodes.
func strategyFor(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, views []nodeView) strategy {
	desired := 0
	for _, v := range views {
		if v.shouldRun {
			desired++
		}
	}
	var knobs *rollingUpdateKnobs
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		knobs = &rollingUpdateKnobs{maxSurge: ru.MaxSurge, maxUnavailable: ru.MaxUnavailable,
			partition: int(ptr.Deref(ru.Partition, 0)), paused: ru.Paused,
			inPlace: ru.InPlace == daemonsetv1alpha1.InPlaceIfPossible}
	}
	onDelete := ds.Spec.UpdateStrategy.Type == daemonsetv1alpha1.OnDeleteStrategyType
	return resolveStrategy(knobs, onDelete, usesHostPorts(&template.Spec), ds.Spec.MinReadySeconds, desired)
}
