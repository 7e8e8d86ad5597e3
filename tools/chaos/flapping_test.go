package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Churn within what the taints allowed is no excess: a delete per NoExecute taint added, a create per delete.
// Anything beyond, on any node, is counted and quoted.
func TestExcessChurn(t *testing.T) {
	allowed := map[string]int{"a": 2, "b": 1}
	creates := map[string]int{"a": 2, "b": 1, "c": 1}
	deletes := map[string]int{"a": 2, "b": 2}
	excess, examples := excessChurn(creates, deletes, allowed)
	// b: one delete beyond its one taint; c: a create with no delete before it.
	if excess != 2 || len(examples) != 2 {
		t.Fatalf("excess %d, examples %q; want 2 on nodes b and c", excess, examples)
	}
	if excess, _ := excessChurn(map[string]int{"a": 1}, map[string]int{"a": 1}, map[string]int{"a": 1}); excess != 0 {
		t.Errorf("churn the taints required counted as excess %d", excess)
	}
}

// A controller busier than the events it was sent, or busy once nothing changes, fails the scenario; the sizer,
// which watches no node, is held to the quiet bound only.
func TestFlappingFailures(t *testing.T) {
	ok := FlappingResult{Duration: 100 * time.Second, NodeEvents: 2000, NodeChanges: 500, PodEvents: 500,
		ReconcilesPerSecond:      map[string]float64{"daemonset-controller": 15, "pipeline-controller": 2, "workload-sizer": 0},
		QuietReconcilesPerSecond: map[string]float64{"daemonset-controller": 0.1}}
	if f := ok.failures(); len(f) != 0 {
		t.Fatalf("a run within bounds fails: %q", f)
	}
	hot := ok
	// The bound is 2 a node change and 1 a pod event: (2×500 + 500) / 100 s = 15 a second, not twice every node
	// event, heartbeats included (45), nor twice every event (50).
	hot.ReconcilesPerSecond = map[string]float64{"daemonset-controller": 16, "workload-sizer": 2}
	hot.QuietReconcilesPerSecond = map[string]float64{"pipeline-controller": 3}
	hot.StalledRollouts, hot.ExcessChurn, hot.Violations = 1, 1, 1
	if f := hot.failures(); len(f) != 6 {
		t.Fatalf("failures = %q, want six: churn, stall, invariant, the DaemonSets and the sizer busy while flapping, busy when quiet", f)
	}
}

// A node's heartbeat (its conditions' times, its images) is no change a controller reads; its labels, cordon,
// taints, allocatable resources and readiness are, and so are its creation and deletion.
func TestNodeChanges(t *testing.T) {
	base := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady"}}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	for _, tc := range []struct {
		name   string
		ev     watch.EventType
		change func(*corev1.Node)
		counts bool
	}{
		{"a heartbeat", watch.Modified, func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"x"}}}
		}, false},
		{"a label", watch.Modified, func(n *corev1.Node) { n.Labels["zone"] = "b" }, true},
		{"a cordon", watch.Modified, func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"a taint", watch.Modified, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}
		}, true},
		{"readiness", watch.Modified, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"allocatable", watch.Modified, func(n *corev1.Node) {
			n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
		}, true},
		{"a deletion", watch.Deleted, func(*corev1.Node) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &eventLog{nodeRead: map[string]string{"n": nodeRead(base)}}
			n := base.DeepCopy()
			tc.change(n)
			l.countNode(watch.Event{Type: tc.ev, Object: n})
			if all, changes := l.nodes, l.nodeChanges; all != 1 || (changes == 1) != tc.counts {
				t.Fatalf("%d events, %d changes; want 1 event, a change: %v", all, changes, tc.counts)
			}
		})
	}
	l := &eventLog{nodeRead: map[string]string{}}
	l.countNode(watch.Event{Type: watch.Added, Object: base.DeepCopy()})
	l.countNode(watch.Event{Type: watch.Modified, Object: base.DeepCopy()})
	if l.nodeChanges != 1 {
		t.Errorf("a node created, then sent again unchanged: %d changes, want 1", l.nodeChanges)
	}
}
