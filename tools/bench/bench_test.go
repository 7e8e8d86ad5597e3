package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCountWrites(t *testing.T) {
	at := func(s string) time.Time { ts, _ := time.Parse(time.RFC3339, s); return ts }
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:01Z"}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:02Z"}`,
		`{"stage":"ResponseComplete","verb":"update","user":{"username":"ds"},"objectRef":{"resource":"daemonsets","subresource":"status"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseStarted","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseComplete","verb":"patch","user":{"username":"kubelet"},"objectRef":{"resource":"pods","subresource":"status"},"stageTimestamp":"2026-01-01T00:00:04Z"}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:09Z"}`,
		`not json`,
	}, "\n")
	got, err := CountWrites(strings.NewReader(log), at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:05Z"))
	if err != nil {
		t.Fatal(err)
	}
	want := Writes{"ds": {"create pods": 2, "update daemonsets/status": 1}, "kubelet": {"patch pods/status": 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("writes (-want +got):\n%s", diff)
	}
	if got.Total("ds") != 3 || got.Total("nobody") != 0 {
		t.Fatalf("totals %d %d", got.Total("ds"), got.Total("nobody"))
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]time.Duration{3 * time.Second, time.Second, 2 * time.Second})
	if s.Median != 2*time.Second || s.Min != time.Second || s.Max != 3*time.Second {
		t.Fatalf("%+v", s)
	}
	if e := Summarize([]time.Duration{time.Second, 3 * time.Second}); e.Median != 2*time.Second {
		t.Fatalf("even count: %v", e.Median)
	}
	if Ratio(time.Second, 2*time.Second) != 0.5 || Ratio(time.Second, 0) != 0 {
		t.Fatal("ratio")
	}
}

func TestOrderAlternates(t *testing.T) {
	impls := []string{"keelson", "builtin"}
	if diff := cmp.Diff([][]string{{"keelson", "builtin"}, {"builtin", "keelson"}, {"keelson", "builtin"}},
		[][]string{Order(0, impls), Order(1, impls), Order(2, impls)}); diff != "" {
		t.Fatal(diff)
	}
}

func TestBuildReport(t *testing.T) {
	s := time.Second
	trials := []trial{
		{Impl: implKeelson, Nodes: 100, Duration: 2 * s, Writes: map[string]int{"create pods": 100, "update daemonsets/status": 4}},
		{Impl: implBuiltin, Nodes: 100, Duration: 4 * s, Writes: map[string]int{"create pods": 100, "update daemonsets/status": 10}},
		{Impl: implBuiltin, Nodes: 100, Duration: 6 * s, Writes: map[string]int{"create pods": 100}},
		{Impl: implKeelson, Nodes: 100, Duration: 3 * s, Writes: map[string]int{"create pods": 100}},
	}
	r := buildReport(trials)
	if len(r) != 1 || r[0].Nodes != 100 {
		t.Fatalf("%+v", r)
	}
	if r[0].Keelson.Median != 2500*time.Millisecond || r[0].Builtin.Median != 5*s || r[0].Ratio != 0.5 {
		t.Fatalf("medians and ratio: %+v", r[0])
	}
	if r[0].KeelsonWritesPerNode != 1.02 || r[0].BuiltinWritesPerNode != 1.05 {
		t.Fatalf("writes per node: %v %v", r[0].KeelsonWritesPerNode, r[0].BuiltinWritesPerNode)
	}
	if !strings.Contains(r.Table(), "| 100 | 2.50s (2.00s–3.00s) | 5.00s (4.00s–6.00s) | 0.50 |") {
		t.Fatalf("table:\n%s", r.Table())
	}
}

func TestParseVMRSS(t *testing.T) {
	if got := ParseVMRSS("Name:\tx\nVmRSS:\t   34816 kB\nVmSwap:\t0 kB\n"); got != 34816 {
		t.Fatalf("VmRSS %d", got)
	}
	if ParseVMRSS("Name:\tx\n") != 0 {
		t.Fatal("no VmRSS line must give 0")
	}
}

// A run's results become docs/benchmarks.md with its tables, two PNG plots and the raw JSON.
func TestWriteDocs(t *testing.T) {
	s := time.Second
	r := Results{Plan: quickPlan, Started: time.Unix(0, 0), Machine: Machine{CPUs: 2, MemoryGiB: 24},
		RSS: map[string]int64{"daemonset-controller": 50 << 20}, SteadyWindow: 20 * s,
		SteadyWrites: Writes{keelsonUser("keelson-system", "keelson", "workload-sizer"): {"deployments": 3}},
		Steady:       idleWindow{ReconcilesPerSecond: map[string]float64{"daemonset-controller": 0.25}},
		Handovers:    []handoverResult{{Duration: s, LeaseDuration: 15 * s}}, HandoverMedian: Summarize([]time.Duration{s})}
	r.Plan.RollingNodes = 100
	r.Convergence = buildReport([]trial{{Impl: implKeelson, Nodes: 100, Duration: s}, {Impl: implBuiltin, Nodes: 100, Duration: 4 * s}})
	r.RollingUpdate = r.Convergence
	dir := t.TempDir()
	if err := writeDocs(r, dir); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 100 | 1.00s (1.00s–1.00s) | 4.00s (4.00s–4.00s) | 0.25 |", "| leader handover < 2 s | median 1.00 s | met |",
		"| daemonset-controller | 0 | 0.25 |", "| workload-sizer | 3 | 0.00 |", "| steady-state writes = 0 | 3 | **missed** |"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
	for _, f := range []string{"convergence.png", "writes-per-node.png", "results.json"} {
		if info, err := os.Stat(filepath.Join(dir, "benchmarks", f)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

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
	got := SumCounter(text, reconcileMetric)
	if len(got) != 2 || got["daemonset"] != 1502 || got["node"] != 7 {
		t.Fatalf("SumCounter = %v, want daemonset 1502 and node 7", got)
	}
}

// A run that spans a rotation is read from the rotated file too; a run whose beginning was rotated away fails.
func TestReadWritesSinceFollowsRotation(t *testing.T) {
	line := func(sec int) string {
		return fmt.Sprintf(`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:%02dZ"}`+"\n", sec)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-01-01T00-00-05.000.log"), []byte(line(1)+line(3)+line(4)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(line(6)+line(8)), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC) }
	events, err := ReadWritesSince(path, at(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d events from 00:03 on across both files, want 4", len(events))
	}
	if err := os.Remove(filepath.Join(dir, "audit-2026-01-01T00-00-05.000.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWritesSince(path, at(3)); err == nil || !strings.Contains(err.Error(), "rotation dropped") {
		t.Fatalf("a run whose beginning was rotated away: %v", err)
	}
}
