package manager

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "") // restored when the test ends
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	if got := tuneGC(); got != defaultGCPercent {
		t.Fatalf("without GOGC: %d, want %d", got, defaultGCPercent)
	}
	if cur := debug.SetGCPercent(100); cur != defaultGCPercent {
		t.Fatalf("the collector runs at %d, want %d", cur, defaultGCPercent)
	}
	// The operator's GOGC, as the runtime applied it at start, is kept.
	t.Setenv("GOGC", "70")
	debug.SetGCPercent(70)
	if got := tuneGC(); got != 70 {
		t.Fatalf("with GOGC=70: %d", got)
	}
	if cur := debug.SetGCPercent(100); cur != 70 {
		t.Fatalf("the collector runs at %d, want 70", cur)
	}
}

// The operator's GOMEMLIMIT, as the runtime applied it at start, is kept; the cgroup's limit is not read then.
func TestTuneMemoryLimitKeepsTheOperators(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20)
	got, err := tuneMemoryLimit(t.Context())
	if err != nil || got != 100<<20 {
		t.Fatalf("with GOMEMLIMIT=100MiB: %d, %v", got, err)
	}
	if cur := debug.SetMemoryLimit(-1); cur != 100<<20 {
		t.Fatalf("the runtime's limit is %d, want 100 MiB", cur)
	}
}
