package metrics

import "testing"

// The reconcile counter is summed per controller over its result series; lookalike names and comments are skipped.
func TestSumCounter(t *testing.T) {
	text := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="daemonset",result="error"} 2
controller_runtime_reconcile_total{controller="daemonset",result="success"} 1.5e+03
controller_runtime_reconcile_total{controller="node",result="success"} 7
controller_runtime_reconcile_total_extra{controller="daemonset"} 99
controller_runtime_reconcile_errors_total{controller="daemonset"} 2
`
	got := SumCounter(text, Reconciles)
	if len(got) != 2 || got["daemonset"] != 1502 || got["node"] != 7 {
		t.Fatalf("SumCounter = %v, want daemonset 1502 and node 7", got)
	}
}

// A process gauge has no controller label: its value is its one sample; a missing gauge says so.
func TestValue(t *testing.T) {
	text := "# TYPE go_goroutines gauge\ngo_goroutines 123\ngo_goroutines_extra 5\nprocess_resident_memory_bytes 4.5e+07\n"
	if v, ok := Value(text, Goroutines); !ok || v != 123 {
		t.Errorf("goroutines = %v, %v; want 123", v, ok)
	}
	if v, ok := Value(text, ResidentMemory); !ok || v != 45e6 {
		t.Errorf("memory = %v, %v; want 4.5e7", v, ok)
	}
	if _, ok := Value(text, "process_open_fds"); ok {
		t.Error("a missing gauge reads as present")
	}
}
