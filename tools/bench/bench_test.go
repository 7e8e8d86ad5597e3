package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/keelson-dev/keelson/tools/internal/audit"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

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
	r := sampleResults()
	dir := t.TempDir()
	if err := writeDocs(r, dir); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 100 | 1.00s (1.00s–1.00s) | 4.00s (4.00s–4.00s) | 0.25 |", "| leader handover < 2 s | median 1.00 s | met |",
		"| daemonset-controller | 1 | 0 | 0.25 |", "| workload-sizer | 100 | 3 | 0.00 |", "| apps/v1 daemon-set-controller | 1 | 0 | not measured |",
		"| steady-state writes = 0 (every Keelson controller) | 3 | **missed** |", "blocking mode", "`--leader-elect=false`",
		"every controller stays below its request", "| overhead per pipeline | +1.000 s |", "Keelson first in 2, bare first in 2", "Keelson went first 1 times and the built-in 1 times", "backoff of up to 15 min",
		"update or patch daemonsets/status", "nothing is pulled or run. kube-controller-manager takes a node for unreachable once its lease has gone 120 s without renewal", "its default is 50 s): kwok"} {
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

// sampleResults is a complete small run.
func sampleResults() Results {
	s := time.Second
	all := func(v int64) map[string]int64 {
		return map[string]int64{"daemonset-controller": v, "workload-sizer": v, "pipeline-controller": v}
	}
	r := Results{Plan: quickPlan, Started: time.Unix(0, 0), Machine: Machine{CPUs: 2, MemoryGiB: 24},
		Setup: clusterSetup{AuditMode: "blocking", NodeMonitorGracePeriod: "2m0s"}, RSS: all(50 << 20), MemoryRequest: all(64 << 20), MemoryLimit: all(256 << 20),
		FirstCounts: FirstCounts(2, []string{implKeelson, implBuiltin}),
		Steady: steadyResult{Window: metrics.Window{From: time.Unix(100, 0), To: time.Unix(120, 0),
			ReconcilesPerSecond: map[string]float64{"daemonset-controller": 0.25, "workload-sizer": 0, "pipeline-controller": 0}},
			Held:   map[string]int{"daemonset-controller": 1, "workload-sizer": 100, "pipeline-controller": 12, builtinDaemonSet: 1},
			Writes: map[string]map[string]int{"workload-sizer": {"patch deployments": 3}}},
		Sizer:     sizerResult{Sizers: 100, ToSized: 5 * s, Writes: 300},
		Handovers: []handoverResult{{Duration: s, LeaseDuration: 15 * s}}, HandoverMedian: Summarize([]time.Duration{s})}
	r.Plan.RollingNodes = 100
	r.Steady.Missable = missablePeriods(20*s, periodicRequeues)
	var pairs []pipelinePair
	for k := range 4 {
		pairs = append(pairs, pipelinePair{Index: k, First: pairOrder(k)[0], Keelson: 3 * s, Bare: 2 * s, Overhead: s})
	}
	r.Pipeline = pipelineResult{Pipelines: 4, Reps: 1, Steps: 5, Pairs: pairs}
	summarizePairs(&r.Pipeline)
	trials := []trial{
		{Bench: "convergence", Impl: implKeelson, Nodes: 100, Duration: s, Writes: map[string]int{"create pods": 100, "patch daemonsets/status": 2}},
		{Bench: "convergence", Impl: implBuiltin, Nodes: 100, Duration: 4 * s, Writes: map[string]int{"create pods": 100, "update daemonsets/status": 3}},
	}
	r.DaemonSet = trials
	r.Convergence = buildReport(trials)
	r.RollingUpdate = r.Convergence
	return r
}

// The memory conclusion follows the measurement: above the request it says so, and never that the request
// leaves room.
func TestMemorySentence(t *testing.T) {
	all := func(v int64) map[string]int64 {
		return map[string]int64{"daemonset-controller": v, "workload-sizer": v, "pipeline-controller": v}
	}
	below := memorySentence(all(50<<20), all(64<<20), all(256<<20), 100, 10)
	if !strings.Contains(below, "leave room") || !strings.Contains(below, "50 MiB against a request of 64 MiB") {
		t.Errorf("below the request: %s", below)
	}
	rss := all(50 << 20)
	rss["workload-sizer"] = 89 << 20
	above := memorySentence(rss, all(64<<20), all(256<<20), 100, 10)
	if strings.Contains(above, "leave room") || !strings.Contains(above, "workload-sizer's, 89 MiB") ||
		!strings.Contains(above, "above the request") {
		t.Errorf("above the request: %s", above)
	}
	if over := memorySentence(all(300<<20), all(64<<20), all(256<<20), 100, 10); !strings.Contains(over, "OOM-killed") {
		t.Errorf("above the limit: %s", over)
	}
}

// The handover conclusion says the lease was released only when the handover was shorter than the lease.
func TestHandoverSentence(t *testing.T) {
	if s := handoverSentence(800*time.Millisecond, 15*time.Second); !strings.Contains(s, "releases its lease on SIGTERM") {
		t.Error(s)
	}
	if s := handoverSentence(16*time.Second, 15*time.Second); strings.Contains(s, "releases its lease") {
		t.Error(s)
	}
}

// A measurement that was not taken fails the run instead of reading as zero.
func TestMissingMeasurements(t *testing.T) {
	r := sampleResults()
	r.Plan.Pipelines, r.Plan.PipelineReps = 4, 1
	r.DaemonSet = append(r.DaemonSet, trial{Bench: benchRollingUpdate, Impl: implKeelson, Nodes: 100})
	writers := []expectedWriter{{What: "sizers to Sized", User: "u", Writes: 5}}
	r.Plan.ScaleNodes = []int{500}
	if got := missingMeasurements(r, writers); !cmp.Equal(got, []string{"DaemonSet in-place-update-gated: no trial",
		"DaemonSet in-place-update: no trial", "DaemonSet scale: no trial", "scale: no daemonset-controller memory read at N = 500",
		"scale: no daemonset-controller pass time read at N = 500"}) {
		t.Fatalf("a run without the in-place and scale trials: %v", got)
	}
	r.DaemonSet = append(r.DaemonSet, trial{Bench: benchInPlace, Impl: implKeelson, Nodes: 100},
		trial{Bench: benchInPlaceGated, Impl: implKeelson, Nodes: 100}, trial{Bench: benchScale, Impl: implKeelson, Nodes: 500})
	r.ScaleRSS, r.ScalePassP99 = map[int]int64{500: 40 << 20}, map[int]float64{500: 0.25}
	if got := missingMeasurements(r, writers); len(got) != 0 {
		t.Fatalf("a complete run: %v", got)
	}
	delete(r.RSS, "pipeline-controller")
	delete(r.Steady.Window.ReconcilesPerSecond, "workload-sizer")
	writers = append(writers, expectedWriter{What: "pipelines to Ready", User: "system:serviceaccount:x:y", Writes: 0})
	got := missingMeasurements(r, writers)
	want := []string{"memory: no pipeline-controller process found", "pipelines to Ready: no write by system:serviceaccount:x:y in the audit log",
		"steady state: no reconcile count scraped from workload-sizer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("missing (-want +got):\n%s", diff)
	}
}

// Each side goes first equally often: DaemonSet repetitions are even, pipeline pairs alternate pair by pair.
func TestAlternationIsEven(t *testing.T) {
	for _, p := range []Plan{fullPlan, quickPlan} {
		p.RollingNodes = p.Nodes[len(p.Nodes)-1]
		if err := checkPlan(p); err != nil {
			t.Fatal(err)
		}
		if c := FirstCounts(p.Reps, []string{implKeelson, implBuiltin}); c[implKeelson] != c[implBuiltin] {
			t.Errorf("DaemonSet first counts %v", c)
		}
		counts := map[string]int{}
		for k := range p.Pipelines * p.PipelineReps {
			counts[pairOrder(k)[0]]++
		}
		if counts[sideKeelson] != counts[sideBare] {
			t.Errorf("pipeline first counts %v", counts)
		}
	}
	odd := quickPlan
	odd.Reps = 3
	if err := checkPlan(odd); err == nil {
		t.Error("three DaemonSet repetitions let one side go first twice")
	}
	few := quickPlan
	few.PipelineReps = 2
	if err := checkPlan(few); err == nil {
		t.Error("two pipeline repetitions are fewer than three")
	}
}

// The percentiles interpolate between ranks; negative durations (a faster side) summarize like any other.
func TestSummarizePercentiles(t *testing.T) {
	var runs []time.Duration
	for i := 10; i >= 0; i-- {
		runs = append(runs, time.Duration(i-2)*time.Second)
	}
	s := Summarize(runs)
	if s.Median != 3*time.Second || s.P10 != -time.Second || s.P90 != 7*time.Second || s.Min != -2*time.Second || s.Max != 8*time.Second {
		t.Fatalf("%+v", s)
	}
	two := Summarize([]time.Duration{0, time.Second})
	if two.P10 != 100*time.Millisecond || two.P90 != 900*time.Millisecond {
		t.Fatalf("two runs: %+v", two)
	}
}

// Status writes land in one row whatever the verb, so Keelson's patches and apps/v1's updates compare.
func TestStatusWritesShareARow(t *testing.T) {
	w := resourceWrites(sampleResults().DaemonSet, "convergence", 100)
	if w[implKeelson]["update or patch daemonsets/status"] != 2 || w[implBuiltin]["update or patch daemonsets/status"] != 3 {
		t.Fatalf("%v", w)
	}
	if tableKey("patch events") != "patch events" || tableKey("create pods/binding") != "create pods/binding" {
		t.Fatal("only status writes merge")
	}
}

// The full plan's idle window covers every periodic requeue an object can be in except the failed-pod backoff's
// ceiling and the informers' resync; the quick one says which it misses.
func TestMissablePeriods(t *testing.T) {
	var got []time.Duration
	for _, p := range missablePeriods(fullPlan.Idle, periodicRequeues) {
		got = append(got, p.Period)
	}
	if diff := cmp.Diff([]time.Duration{15 * time.Minute, time.Hour, 10 * time.Hour}, got); diff != "" {
		t.Fatal(diff)
	}
	if s := missableText(20*time.Second, missablePeriods(20*time.Second, periodicRequeues)); !strings.Contains(s, "looks again 1 min") {
		t.Fatal(s)
	}
}

// The cluster's setup is read off its processes' flags and its audit policy.
func TestClusterSetupParsing(t *testing.T) {
	args := []string{"/bin/kube-apiserver", "--audit-log-mode=batch", "--leader-elect", "false", "--profiling"}
	if v, ok := FlagValue(args, "audit-log-mode"); !ok || v != "batch" {
		t.Errorf("audit-log-mode %q %v", v, ok)
	}
	if v, _ := FlagValue(args, "leader-elect"); v != "false" {
		t.Errorf("leader-elect %q", v)
	}
	if v, _ := FlagValue(args, "profiling"); v != "true" {
		t.Errorf("profiling %q", v)
	}
	if g := nodeMonitorGracePeriod([]string{"/bin/kube-controller-manager", "--node-monitor-grace-period=2m0s"}); g != "2m0s" {
		t.Errorf("node-monitor-grace-period %q, want 2m0s", g)
	}
	if g := nodeMonitorGracePeriod([]string{"/bin/kube-controller-manager"}); g != "50s" {
		t.Errorf("node-monitor-grace-period %q without the flag, want the default 50s", g)
	}
	if v, _ := FlagValue([]string{"x", "--node-monitor-grace-period=40s", "--node-monitor-grace-period=2m0s"}, "node-monitor-grace-period"); v != "2m0s" {
		t.Errorf("a flag given twice: %q, want its last value", v)
	}
	if v, ok := FlagValue([]string{"x", "--audit-log-mode=batch", "--", "--audit-log-mode=blocking"}, "audit-log-mode"); !ok || v != "batch" {
		t.Errorf("an argument after --: %q %v, want the flag before it", v, ok)
	}
	for grace, want := range map[string]string{
		"50s":   "gone 50 s without renewal (`--node-monitor-grace-period`, its default).",
		"30s":   "gone 30 s without renewal (`--node-monitor-grace-period`, read from its command line; its default is 50 s).",
		"500ms": "gone 0.5 s without renewal",
		"":      "was not recorded.",
	} {
		if note := nodeGraceNote(Results{Setup: clusterSetup{NodeMonitorGracePeriod: grace}}); !strings.HasSuffix(note, want) && !strings.Contains(note, want+" ") {
			t.Errorf("grace period %q: %q, want it to say %q", grace, note, want)
		}
	}
	if auditMode([]string{"x"}) != "blocking" || !auditCanDrop("batch") || auditCanDrop("blocking-strict") {
		t.Error("audit modes")
	}
	policy := `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
`
	if audited, err := policyAuditsLeases([]byte(policy)); err != nil || audited {
		t.Errorf("a policy whose first Lease rule is None: %v %v", audited, err)
	}
	if audited, _ := policyAuditsLeases([]byte("rules:\n- level: Metadata\n")); !audited {
		t.Error("a policy that logs everything logs Leases")
	}
}

// Dropped audit events show in the apiserver's error counter; a cluster without auditing fails.
func TestParseAuditCounters(t *testing.T) {
	text := `apiserver_audit_event_total 1200
apiserver_audit_error_total{plugin="buffered"} 3
apiserver_audit_error_total{plugin="log"} 1
`
	ev, errs, err := parseAuditCounters(text)
	if err != nil || ev != 1200 || errs != 4 {
		t.Fatalf("%v %v %v", ev, errs, err)
	}
	if _, errs, err := parseAuditCounters("apiserver_audit_event_total 5\n"); err != nil || errs != 0 {
		t.Fatalf("no error series yet: %v %v", errs, err)
	}
	if _, _, err := parseAuditCounters("other_metric 1\n"); err == nil {
		t.Fatal("auditing off must fail")
	}
}

// A bare twin keeps the controller's pod spec, moves to its own node, and carries nothing of the controller's.
func TestBareDeployment(t *testing.T) {
	tpl := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pl-template-step-0", Namespace: "ns",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "keelson"}, OwnerReferences: []metav1.OwnerReference{{Name: "pl-template"}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"inference.keelson.dev/pipeline": "pl-template"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "img"}},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"kwok-node-0"}}}}}}}}}}}}
	d := bareDeployment(tpl, "bare-0-0-1", "kwok-node-7")
	if d.Name != "bare-0-0-1" || len(d.Labels) != 0 || len(d.OwnerReferences) != 0 {
		t.Errorf("metadata %+v", d.ObjectMeta)
	}
	if diff := cmp.Diff(map[string]string{"bench-app": "bare-0-0-1"}, d.Spec.Template.Labels); diff != "" {
		t.Error(diff)
	}
	if got := d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values; got[0] != "kwok-node-7" {
		t.Errorf("pinned to %v", got)
	}
	if v := tpl.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0]; v != "kwok-node-0" {
		t.Errorf("the template changed: %s", v)
	}
	if d.Spec.Template.Spec.Containers[0].Image != "img" {
		t.Error("image")
	}
}

// The idle window waits for the newest write of the measured users only; other users' writes do not hold it.
func TestLastWriteBy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := []audit.WriteEvent{{At: t0, User: "a"}, {At: t0.Add(2 * time.Second), User: "b"}, {At: t0.Add(time.Second), User: "a"}}
	if got := lastWriteBy(events, map[string]bool{"a": true}); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("last write by a: %v", got)
	}
	if got := lastWriteBy(events, map[string]bool{"c": true}); !got.IsZero() {
		t.Errorf("no write by c, got %v", got)
	}
}

// The tail reads only what was appended, whole lines only, and starts over when the log was rotated.
func TestAuditTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	line := func(user string) string {
		return `{"stage":"ResponseComplete","verb":"create","user":{"username":"` + user +
			`"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:00Z"}` + "\n"
	}
	if err := os.WriteFile(path, []byte(line("before")), 0o600); err != nil {
		t.Fatal(err)
	}
	tail, err := newAuditTail(path)
	if err != nil {
		t.Fatal(err)
	}
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(s)
		_ = f.Close()
	}
	whole := line("a")
	appendTo(whole + whole[:20]) // a line and a half
	events, err := tail.next()
	if err != nil || len(events) != 1 || events[0].User != "a" {
		t.Fatalf("first read: %v %v", events, err)
	}
	appendTo(whole[20:])
	if events, _ := tail.next(); len(events) != 1 {
		t.Fatalf("the rest of the cut line: %v", events)
	}
	if err := os.WriteFile(path, []byte(line("rotated")), 0o600); err != nil {
		t.Fatal(err)
	}
	if events, _ := tail.next(); len(events) != 1 || events[0].User != "rotated" {
		t.Fatalf("after rotation: %v", events)
	}
}

// The model-cache section replaces its earlier self between its markers, and a full run keeps it.
func TestModelCacheSection(t *testing.T) {
	r := ModelCacheResult{Size: 200 << 20, Trials: []ModelCacheTrial{
		{ColdReady: 9 * time.Second, HitReady: 3 * time.Second, ColdFetch: 6 * time.Second, HitFetch: 50 * time.Millisecond, HitReported: true}}}
	text := modelCacheSection(r)
	for _, want := range []string{"200 MiB", "| cold (downloaded) | 9.00 s | 6.00 s |", "| from the cache | 3.00 s | 0.05 s |"} {
		if !strings.Contains(text, want) {
			t.Errorf("section lacks %q:\n%s", want, text)
		}
	}
	doc := withSection("# Benchmarks\n", modelCacheMarkers, "placeholder\n")
	doc = withSection(doc, modelCacheMarkers, text)
	if strings.Contains(doc, "placeholder") || strings.Count(doc, modelCacheMarkers[0]) != 1 {
		t.Fatalf("the section was not replaced:\n%s", doc)
	}
	if kept := keptSection(doc, modelCacheMarkers); !strings.Contains(kept, text) {
		t.Fatalf("kept %q", kept)
	}
}

// A trial far slower than its peers fails the run, named, whatever the median says: one convergence of 599 s among
// three of 8.5 s is a stall, not noise.
func TestAStalledTrialIsNamed(t *testing.T) {
	conv := func(impl string, n, rep int, secs float64) trial {
		return trial{Bench: benchConvergence, Impl: impl, Nodes: n, Rep: rep, Duration: time.Duration(secs * float64(time.Second))}
	}
	trials := []trial{conv(implKeelson, 500, 0, 8.5), conv(implKeelson, 500, 1, 599.1), conv(implKeelson, 500, 2, 8.4),
		conv(implKeelson, 500, 3, 8.6), conv(implBuiltin, 500, 0, 20), conv(implBuiltin, 500, 1, 21),
		conv(implKeelson, 100, 0, 2), conv(implKeelson, 100, 1, 5.9)}
	got := stalledTrials(trials)
	if len(got) != 1 || !strings.Contains(got[0], "N=500 trial 1 took 9m59.1s") {
		t.Fatalf("stalled trials %q: want the N=500 trial 1 alone", got)
	}
	if got := stalledTrials(trials[2:]); len(got) != 0 {
		t.Fatalf("no stall, yet %q", got)
	}
	// A pipeline, its bare twin and a leader handover are judged among their own peers too; a trial of a second
	// that took four (three times its peers', but by three seconds) is noise, not a stall.
	r := Results{Pipeline: pipelineResult{Pairs: []pipelinePair{{Keelson: 2 * time.Second, Bare: time.Second},
		{Keelson: 2 * time.Second, Bare: 4 * time.Second}, {Keelson: 9 * time.Second, Bare: time.Second},
		{Keelson: 2 * time.Second, Bare: 8 * time.Second}}},
		Handovers: []handoverResult{{Duration: time.Second}, {Duration: 2 * time.Second}, {Duration: 10 * time.Second}}}
	got = stalledTrials(timedTrials(r))
	want := []string{"leader handover workload-sizer trial 2 took 10s", "pipeline bare twin trial 3 took 8s", "pipeline keelson trial 2 took 9s"}
	if len(got) != len(want) {
		t.Fatalf("stalled trials %q: want %q", got, want)
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Fatalf("stalled trials %q: want %q", got, want)
		}
	}
}

// The write floor is the time a client budget lets the writes take: the burst at once, the rest at qps. A run slower
// than 1.1 times it misses the sizer's target, and the table of targets says so.
func TestSizerWriteFloor(t *testing.T) {
	qps, burst := budgetOf([]string{"--log-level=info", "--kube-api-qps=50", "--kube-api-burst=100"})
	if qps != 50 || burst != 100 {
		t.Fatalf("budget = %v/%v, want 50/100", qps, burst)
	}
	if f := writeFloor(2100, qps, burst); f != 40*time.Second {
		t.Fatalf("floor of 2100 writes = %s, want 40s", f)
	}
	if f := writeFloor(80, qps, burst); f != 0 {
		t.Fatalf("writes within the burst: floor %s, want 0", f)
	}
	r := sampleResults()
	r.Sizer = sizerResult{Sizers: 1000, ToSized: 46 * time.Second, Writes: 2100, QPS: qps, Burst: burst, Floor: writeFloor(2100, qps, burst),
		ByKind: map[string]int{"patch deployments": 1000, "patch workloadsizers/status": 1100}}
	page := summaryText(r)
	for _, want := range []string{"2.10 per sizer", "| patch deployments | 1000 | 1.00 |", "Sized ≤ 1.1 × their write floor | 1.15 × (40.00 s for 2100 writes) | **missed** |"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The cost curve names each scale point; a p99 past the histogram's last bucket reads as such, and misses the target.
func TestScaleCostTable(t *testing.T) {
	r := sampleResults()
	r.Plan.ScaleNodes = []int{1000, 10000}
	r.Scale = Report{{Nodes: 1000, Ratio: 0.98}, {Nodes: 10000, Ratio: 0.97}}
	r.ScaleRSS = map[int]int64{1000: 90 << 20, 10000: 180 << 20}
	r.ScalePassP99 = map[int]float64{1000: 0.25, 10000: noBound}
	page := summaryText(r)
	for _, want := range []string{"| 1000 | ", "| 10000 | ", "≤ 0.25 s", "| longest pass (p99) < 2 s at N = 10000 | over 60 s | **missed** |",
		"| daemonset-controller RSS ≤ 250 MiB at N = 10000 | 180.0 MiB | met |"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The idle window opens only after the controllers' last event write-back could have landed: the recorder flushes
// once a minute the series not written for a minute (controllers/internal/recorder's SeriesRefresh), up to two
// minutes after the write before it.
func TestSettleQuietOutlastsTheEventWriteBack(t *testing.T) {
	const seriesRefresh = time.Minute
	if settleQuiet <= 2*seriesRefresh {
		t.Fatalf("settleQuiet %s: a write-back up to %s after the last write would land in the idle window", settleQuiet, 2*seriesRefresh)
	}
}

// Clearing 10,000 pods took longer than five minutes of collection deletes on two cores (the apiserver deletes
// them one at a time): the clearing waits grow with the trial's pods.
func TestClearTimeoutGrowsWithThePods(t *testing.T) {
	if got := clearTimeout(10000); got < 20*time.Minute {
		t.Errorf("clearTimeout(10000) = %s, want at least 20m", got)
	}
	if got := clearTimeout(0); got < 10*time.Minute {
		t.Errorf("clearTimeout(0) = %s, want at least the garbage collector's 10m", got)
	}
}
