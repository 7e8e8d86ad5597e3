package pipeline

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// HostnameLabel is the node label a step's location names. Pinning (the pod's required node affinity), the step's
// status and the webhook's warnings all look the node up by it, never by the node's name: the two differ on some
// clouds, and the scheduler follows the label.
const HostnameLabel = hostnameLabel

// PinnedNodesSelector selects the nodes the locations name, by their kubernetes.io/hostname label; nil when there
// is no location.
func PinnedNodesSelector(locations []string) (labels.Selector, error) {
	if len(locations) == 0 {
		return nil, nil
	}
	req, err := labels.NewRequirement(HostnameLabel, selection.In, locations)
	if err != nil {
		return nil, fmt.Errorf("selecting nodes by %s: %w", HostnameLabel, err)
	}
	return labels.NewSelector().Add(*req), nil
}

// ByHostname indexes nodes by their kubernetes.io/hostname label (the first node wins if two claim one name).
func ByHostname(nodes []corev1.Node) map[string]*corev1.Node {
	out := map[string]*corev1.Node{}
	for i := range nodes {
		if h, ok := nodes[i].Labels[HostnameLabel]; ok {
			if _, dup := out[h]; !dup {
				out[h] = &nodes[i]
			}
		}
	}
	return out
}

// nodeReadChanged reports whether a node update changes what a pass reads of the node: its labels (the hostname
// label a location names), its cordon and taints, its allocatable resources (GPUs). A kubelet rewrites the rest of
// its node's status every few seconds (heartbeats, conditions, images), which no pass reads.
func nodeReadChanged(old, updated *corev1.Node) bool {
	return !maps.Equal(old.Labels, updated.Labels) || old.Spec.Unschedulable != updated.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, updated.Status.Allocatable)
}

// locations lists the distinct locations of the steps.
func locations(steps []inferencev1alpha1.Step) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range steps {
		if s.Location != "" && !seen[s.Location] {
			seen[s.Location] = true
			out = append(out, s.Location)
		}
	}
	return out
}

// pinnedNodes reads the nodes the steps are pinned to, by hostname label, keyed by that label.
func (r *Reconciler) pinnedNodes(ctx context.Context, steps []inferencev1alpha1.Step) (map[string]*corev1.Node, error) {
	sel, err := PinnedNodesSelector(locations(steps))
	if err != nil || sel == nil {
		return map[string]*corev1.Node{}, err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the pinned nodes: %w", err)
	}
	return ByHostname(nodes.Items), nil
}
