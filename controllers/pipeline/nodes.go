package pipeline

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// nodeReadChanged reports whether a node update changes what a pass reads of the node: its labels (the hostname
// label a location names), its cordon and taints, its allocatable resources (GPUs), its Ready condition's status and
// reason. A kubelet rewrites the rest of its node's status every few seconds (heartbeats, the conditions' times and
// messages, images), which no pass reads.
func nodeReadChanged(old, updated *corev1.Node) bool {
	return !maps.Equal(old.Labels, updated.Labels) || old.Spec.Unschedulable != updated.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, updated.Status.Allocatable) ||
		readyState(old) != readyState(updated)
}

// readyState is the node's Ready condition as a pass reads it: its status and reason, a node that reports none yet
// taken as ready.
func readyState(n *corev1.Node) string {
	c := nodeReadiness(n)
	if !nodeNotReady(n) {
		return string(corev1.ConditionTrue)
	}
	return string(c.Status) + "/" + c.Reason
}

// nodeNotReady says whether the node reports itself not ready: its Ready condition False or Unknown.
func nodeNotReady(n *corev1.Node) bool {
	s := nodeReadiness(n).Status
	return s == corev1.ConditionFalse || s == corev1.ConditionUnknown
}

// nodeReadiness is the node's Ready condition (an empty status when it reports none yet: a node just registered is
// not called not ready before its kubelet has said anything).
func nodeReadiness(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{Type: corev1.NodeReady}
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
	sel, err := pipelinespec.PinnedNodesSelector(locations(steps))
	if err != nil || sel == nil {
		return map[string]*corev1.Node{}, err
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the pinned nodes: %w", err)
	}
	return pipelinespec.ByHostname(nodes.Items), nil
}
