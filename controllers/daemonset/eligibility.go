package daemonset

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulinghelpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Taints the node lifecycle controller and kubelet set; a DaemonSet's pods tolerate them automatically, as apps/v1's
// do, because a node agent must keep running (or start) exactly when a node is in trouble.
const (
	taintNotReady           = "node.kubernetes.io/not-ready"
	taintUnreachable        = "node.kubernetes.io/unreachable"
	taintDiskPressure       = "node.kubernetes.io/disk-pressure"
	taintMemoryPressure     = "node.kubernetes.io/memory-pressure"
	taintPIDPressure        = "node.kubernetes.io/pid-pressure"
	taintUnschedulable      = "node.kubernetes.io/unschedulable"
	taintNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// withDaemonTolerations returns tolerations plus the ones every daemon pod gets: not-ready and unreachable
// (NoExecute, so the pod is not evicted from a failing node), disk, memory and PID pressure and unschedulable
// (NoSchedule), and network-unavailable only for host-network pods (which do not need the pod network). A user's own
// toleration for the same key and effect is kept as it is.
func withDaemonTolerations(tolerations []corev1.Toleration, hostNetwork bool) []corev1.Toleration {
	auto := []corev1.Toleration{
		{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: taintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: taintDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: taintMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: taintPIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: taintUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		auto = append(auto, corev1.Toleration{Key: taintNetworkUnavailable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule})
	}
	out := append([]corev1.Toleration(nil), tolerations...)
	for _, a := range auto {
		present := false
		for _, t := range tolerations {
			if t.Key == a.Key && t.Effect == a.Effect {
				present = true
				break
			}
		}
		if !present {
			out = append(out, a)
		}
	}
	return out
}

// eligibility says whether a node should run the DaemonSet's pod.
type eligibility struct {
	// shouldRun: the node admits a new pod (selector, required affinity, taints all fit).
	shouldRun bool
	// shouldContinueRunning: a pod already on the node may stay. It differs from shouldRun only for a node tainted
	// NoSchedule (or a NoExecute taint the pod tolerates): no new pod, but the running one is not evicted.
	shouldContinueRunning bool
}

// nodeEligibility decides whether node should run a pod of spec (the pod spec with daemon tolerations added), the
// way apps/v1's DaemonSet controller and the scheduler decide it: spec.nodeName, the node selector and required
// node affinity must match; untolerated NoSchedule or NoExecute taints keep a new pod off; only an untolerated
// NoExecute taint evicts a running one.
func nodeEligibility(node *corev1.Node, spec *corev1.PodSpec) eligibility {
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return eligibility{}
	}
	if match, err := nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity).Match(node); err != nil || !match {
		return eligibility{}
	}
	log := logr.Discard()
	_, untolerated := schedulinghelpers.FindMatchingUntoleratedTaint(log, node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, true)
	if !untolerated {
		return eligibility{shouldRun: true, shouldContinueRunning: true}
	}
	_, evicts := schedulinghelpers.FindMatchingUntoleratedTaint(log, node.Spec.Taints, spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, true)
	return eligibility{shouldContinueRunning: !evicts}
}

// nodeIsDown reports whether the node is NotReady or unreachable: its Ready condition is not True. Pods on such a
// node cannot be replaced (the kubelet would never confirm the old pod's end), so a rollout passes over them and
// they do not use up its maxUnavailable budget.
func nodeIsDown(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}
