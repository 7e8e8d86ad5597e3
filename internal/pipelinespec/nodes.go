package pipelinespec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// HostnameLabel is the node label a step's location names. Pinning (the pod's required node affinity), the step's
// status and the webhook's warnings all look the node up by it, never by the node's name: the two differ on some
// clouds, and the scheduler follows the label.
const HostnameLabel = "kubernetes.io/hostname"

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
