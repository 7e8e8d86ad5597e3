package metrics

import (
	"math"
	"testing"
)

// A controller's buckets are read from its series alone and summed over pods' texts by the caller; the quantile of
// the observations between two reads is the upper bound of the bucket that holds it.
func TestQuantileOfReconcileTime(t *testing.T) {
	before := Buckets(`controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="0.5"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="1"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="2"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="+Inf"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="node",le="+Inf"} 99
`, ReconcileTime, "daemonset")
	after := Buckets(`controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="0.5"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="1"} 108
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="2"} 109
controller_runtime_reconcile_time_seconds_bucket{controller="daemonset",le="+Inf"} 110
controller_runtime_reconcile_time_seconds_count{controller="daemonset"} 110
`, ReconcileTime, "daemonset")
	if len(before) != 4 || before[math.Inf(1)] != 10 {
		t.Fatalf("buckets = %v: the node controller's series or the count was read", before)
	}
	// 100 passes since: 90 under 0.5 s, 8 under 1 s, 1 under 2 s, 1 longer.
	for _, tc := range []struct{ q, want float64 }{{0.5, 0.5}, {0.9, 0.5}, {0.95, 1}, {0.99, 2}, {1, math.Inf(1)}} {
		if got := Quantile(before, after, tc.q); got != tc.want {
			t.Errorf("q%.2f = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Quantile(after, after, 0.99); got != 0 {
		t.Errorf("no pass between the reads: %v, want 0", got)
	}
}
