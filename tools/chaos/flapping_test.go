package main

import (
	"testing"
	"time"
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
	ok := FlappingResult{Duration: 100 * time.Second, NodeEvents: 500, PodEvents: 500,
		ReconcilesPerSecond:      map[string]float64{"daemonset-controller": 15, "pipeline-controller": 2, "workload-sizer": 0},
		QuietReconcilesPerSecond: map[string]float64{"daemonset-controller": 0.1}}
	if f := ok.failures(); len(f) != 0 {
		t.Fatalf("a run within bounds fails: %q", f)
	}
	hot := ok
	// The bound is 2 a node event and 1 a pod event: (2×500 + 500) / 100 s = 15 a second, not twice every event (20).
	hot.ReconcilesPerSecond = map[string]float64{"daemonset-controller": 16, "workload-sizer": 2}
	hot.QuietReconcilesPerSecond = map[string]float64{"pipeline-controller": 3}
	hot.StalledRollouts, hot.ExcessChurn, hot.Violations = 1, 1, 1
	if f := hot.failures(); len(f) != 6 {
		t.Fatalf("failures = %q, want six: churn, stall, invariant, the DaemonSets and the sizer busy while flapping, busy when quiet", f)
	}
}
