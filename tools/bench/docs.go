package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryGiB int    `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Commit    string `json:"commit"`
	Go        string `json:"go"`
}

func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		_, _ = fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		m.MemoryGiB = (kb + 1<<19) >> 20
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(b))
	}
	return m
}

// verdict says whether a target is met.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// summaryText is the tables and the targets, as Markdown.
func summaryText(r Results) string {
	var b strings.Builder
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	fmt.Fprintf(&b, "### DaemonSet convergence (create → all N pods available)\n\n%s\n", r.Convergence.Table())
	fmt.Fprintf(&b, "### DaemonSet rolling update (N = %d, maxUnavailable 10%%)\n\n%s\n", r.Plan.RollingNodes, r.RollingUpdate.Table())
	// The worst ratio, and the largest excess of Keelson's writes per node over the built-in's, across every N.
	worstRatio, keelsonWrites := 0.0, -1e9
	for _, row := range append(append(Report{}, r.Convergence...), r.RollingUpdate...) {
		worstRatio = max(worstRatio, row.Ratio)
		keelsonWrites = max(keelsonWrites, row.KeelsonWritesPerNode-row.BuiltinWritesPerNode)
	}
	fmt.Fprintf(&b, "### What the writes are (N = %d, per trial, averaged over the repetitions)\n\nConvergence:\n\n%s\nRolling update:\n\n%s\n",
		r.Plan.RollingNodes, resourceTable(resourceWrites(r.DaemonSet, "convergence", r.Plan.RollingNodes)),
		resourceTable(resourceWrites(r.DaemonSet, "rolling-update", r.Plan.RollingNodes)))
	steadyTotal := 0
	fmt.Fprintf(&b, "### Steady state (N = %d, %s idle after convergence)\n\n| controller | writes | reconciles per second |\n|---|---|---|\n", r.Plan.RollingNodes, sec(r.SteadyWindow))
	for _, name := range binaryNames {
		w := 0
		for u, byResource := range r.SteadyWrites {
			if strings.HasSuffix(u, "-"+name) {
				w += sumWrites(byResource)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f |\n", name, w, r.Steady.ReconcilesPerSecond[name])
		steadyTotal += w
	}
	fmt.Fprintf(&b, "\n### Memory (N = %d nodes, a Keelson object of every kind, %d unrelated pods)\n\n| controller | RSS |\n|---|---|\n", r.Plan.RollingNodes, r.Plan.Unrelated)
	maxRSS := int64(0)
	for _, name := range binaryNames {
		fmt.Fprintf(&b, "| %s | %.1f MiB |\n", name, float64(r.RSS[name])/(1<<20))
		maxRSS = max(maxRSS, r.RSS[name])
	}
	fmt.Fprintf(&b, "\n### Leader handover (workload-sizer, %d rolls)\n\nmedian %s (min %s, max %s); lease duration %s\n",
		len(r.Handovers), sec(r.HandoverMedian.Median), sec(r.HandoverMedian.Min), sec(r.HandoverMedian.Max), leaseOf(r))
	fmt.Fprintf(&b, "\n### WorkloadSizer\n\n%d sizers over existing Deployments: all Sized in %s; %d writes and %.2f reconciles per second in the %s idle window after\n",
		r.Sizer.Sizers, sec(r.Sizer.ToSized), r.Sizer.SteadyWrites, r.Sizer.Idle.ReconcilesPerSecond["workload-sizer"], sec(r.Sizer.Idle.To.Sub(r.Sizer.Idle.From)))
	fmt.Fprintf(&b, "\n### Pipeline\n\n%d pipelines × %d steps Ready in %s; the same Deployments and Services applied directly: %s; overhead per step %s\n",
		r.Pipeline.Pipelines, r.Pipeline.Steps, sec(r.Pipeline.Keelson), sec(r.Pipeline.Bare), sec(r.Pipeline.OverheadPerStep))
	fmt.Fprintf(&b, "\n### Targets\n\n| target | result | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| DaemonSet Keelson / built-in ≤ 1.0 at every N | worst %.2f | %s |\n", worstRatio, verdict(worstRatio <= 1.0))
	fmt.Fprintf(&b, "| writes per node ≤ built-in | worst difference %+.2f | %s |\n", keelsonWrites, verdict(keelsonWrites <= 0))
	fmt.Fprintf(&b, "| steady-state writes = 0 | %d | %s |\n", steadyTotal, verdict(steadyTotal == 0))
	fmt.Fprintf(&b, "| RSS ≤ 100 MiB per controller | largest %.1f MiB | %s |\n", float64(maxRSS)/(1<<20), verdict(maxRSS <= 100<<20))
	fmt.Fprintf(&b, "| leader handover < 2 s | median %s | %s |\n", sec(r.HandoverMedian.Median), verdict(r.HandoverMedian.Median < 2*time.Second))
	fmt.Fprintf(&b, "| %d sizers Sized < 60 s | %s | %s |\n", r.Sizer.Sizers, sec(r.Sizer.ToSized), verdict(r.Sizer.ToSized < time.Minute))
	fmt.Fprintf(&b, "| sizer steady-state writes = 0 | %d | %s |\n", r.Sizer.SteadyWrites, verdict(r.Sizer.SteadyWrites == 0))
	fmt.Fprintf(&b, "| pipeline overhead < 1 s per step | %s | %s |\n", sec(r.Pipeline.OverheadPerStep), verdict(r.Pipeline.OverheadPerStep < time.Second))
	return b.String()
}

func leaseOf(r Results) string {
	if len(r.Handovers) == 0 {
		return "-"
	}
	return r.Handovers[0].LeaseDuration.String()
}

func sumWrites(w map[string]int) int {
	n := 0
	for _, c := range w {
		n += c
	}
	return n
}

// writeDocs writes docs/benchmarks.md, the plots and the raw results.
func writeDocs(r Results, dir string) error {
	bdir := filepath.Join(dir, "benchmarks")
	if err := writeJSON(filepath.Join(bdir, "results.json"), r); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(bdir, "convergence.png"), "DaemonSet convergence", "seconds", r.Convergence,
		func(row Row) (float64, float64) { return row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds() }); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(bdir, "writes-per-node.png"), "DaemonSet writes per converged node", "writes per node", r.Convergence,
		func(row Row) (float64, float64) { return row.KeelsonWritesPerNode, row.BuiltinWritesPerNode }); err != nil {
		return err
	}
	doc := fmt.Sprintf(benchmarksDoc, r.Started.UTC().Format("2006-01-02"), r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel,
		r.Machine.Commit, r.Machine.Go, meaning(r), summaryText(r))
	return os.WriteFile(filepath.Join(dir, "benchmarks.md"), []byte(doc), 0o644)
}

// linePlot draws Keelson and the built-in against N.
func linePlot(path, title, yLabel string, rows Report, y func(Row) (float64, float64)) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "nodes"
	p.Y.Label.Text = yLabel
	k, b := make(plotter.XYs, len(rows)), make(plotter.XYs, len(rows))
	for i, row := range rows {
		ky, by := y(row)
		k[i] = plotter.XY{X: float64(row.Nodes), Y: ky}
		b[i] = plotter.XY{X: float64(row.Nodes), Y: by}
	}
	if err := plotutil.AddLinePoints(p, "Keelson", k, "apps/v1 (kube-controller-manager)", b); err != nil {
		return err
	}
	p.Legend.Top = true
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// benchmarksDoc is docs/benchmarks.md; make bench rewrites it.
const benchmarksDoc = `# Benchmarks

What does Keelson cost a cluster, next to what it replaces? Every number here comes from one run of ` + "`make bench`" + `
(run %s) on the local cluster ([local-cluster.md](local-cluster.md)): Keelson and the built-in controller on the
same simulated nodes, in the same run, alternating which goes first across three repetitions. The machine is
noisy (%d cores, %d GiB, kernel %s; commit %s, %s): trust the ratios within the run more than the absolute times.

## Method

- **Nodes** are kwok nodes (` + "`cluster nodes --fake-nodes N`" + `), Ready and free of the not-ready taint before each
  measurement, and every other DaemonSet in the cluster (` + "`make dev`" + `'s sample runs on every node) has caught up with
  the resized pool (its pods on the nodes removed deleted too), so that its writes neither compete with a trial nor land in its window. Pods on simulated nodes
  are marked Running and Ready by kwok; nothing is pulled or run.
- **DaemonSet convergence**: create → the DaemonSet's own status says N pods updated and available, polled every
  200 ms; then the DaemonSet is deleted and its pods waited out before the next trial. Keelson's DaemonSet and
  apps/v1's have the same pod template (a pause container, a toleration of the simulated nodes' taint, a node
  selector for them) and both roll with maxUnavailable 10%%.
- **Client budgets are equal**: every Keelson controller runs with the chart's default ` + "`kubeAPI`" + ` (50 requests per
  second, burst 100) and the local cluster gives kube-controller-manager the same (its own default, 20/30, would cap
  the apps/v1 DaemonSet controller at about 20 pod creations per second, and the comparison would measure that).
  Both DaemonSets' pods are bound by the same kube-scheduler.
- **Writes** are counted in the apiserver's audit log (creates, updates, patches, deletes), attributed to the user
  that made them: kube-controller-manager runs with per-controller service accounts
  (` + "`system:serviceaccount:kube-system:daemon-set-controller`" + `), Keelson with its chart's. Nothing inside Keelson counts.
- **Steady state** is an idle window after convergence, with the reconciles each controller finished in it read
  from its own ` + "`controller_runtime_reconcile_total`" + ` (scraped from ` + "`/metrics`" + ` with a token allowed to read it); **memory** is each controller process's VmRSS on the node,
  the largest replica's, read 30 s after the memory benchmark's DaemonSet converged, with the largest pool, a Keelson object of every kind and unrelated pods in the cluster;
  **leader handover** runs from the old leader pod's deletion (its SIGTERM) to the new leader holding the lease and
  having reconciled a probe object changed at that moment.
- Raw results: [benchmarks/results.json](benchmarks/results.json). Rerun with ` + "`make bench`" + ` (` + "`make bench-quick`" + `: small
  sizes, prints the tables; ` + "`go run ./tools/bench --nodes 1000 --reps 1`" + ` explores one size and writes nothing).

![convergence](benchmarks/convergence.png)
![writes per node](benchmarks/writes-per-node.png)

## What this means for you

%s
## Results

%s
`

// meaning says, in a user's terms, what a run's numbers imply.
func meaning(r Results) string {
	var b strings.Builder
	if n := len(r.Convergence); n > 0 {
		row := r.Convergence[n-1]
		fmt.Fprintf(&b, "- **Rolling out a DaemonSet to %d nodes** takes %.1f s with Keelson and %.1f s with apps/v1 (ratio %.2f). "+
			"Past the client's burst, both are bounded by their request budget (here 50 per second each, and one pod "+
			"creation per node): raise the chart's `kubeAPI` to go faster, at the price of a busier apiserver.\n",
			row.Nodes, row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(), row.Ratio)
		fmt.Fprintf(&b, "- **API cost**: %.2f writes per converged node for Keelson against %.2f for apps/v1 — the pod "+
			"creations themselves and little else (see what the writes are, below).\n",
			row.KeelsonWritesPerNode, row.BuiltinWritesPerNode)
	}
	if n := len(r.RollingUpdate); n > 0 {
		row := r.RollingUpdate[n-1]
		fmt.Fprintf(&b, "- **Updating the template on %d nodes** (10%% unavailable at a time) takes %.1f s with Keelson "+
			"and %.1f s with apps/v1 (ratio %.2f).\n", row.Nodes, row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(), row.Ratio)
	}
	steady := 0
	for _, w := range r.SteadyWrites {
		steady += sumWrites(w)
	}
	idleVerdict := "Keelson costs nothing"
	if steady > 0 {
		idleVerdict = "Keelson still writes"
	}
	fmt.Fprintf(&b, "- **Idle, %s**: %d writes in %.0f s with a DaemonSet on %d nodes; reconciles per second: %s.\n",
		idleVerdict, steady, r.SteadyWindow.Seconds(), r.Plan.RollingNodes, rates(r.Steady.ReconcilesPerSecond))
	maxRSS := int64(0)
	for _, v := range r.RSS {
		maxRSS = max(maxRSS, v)
	}
	fmt.Fprintf(&b, "- **Memory**: at most %.0f MiB per controller with %d nodes and %d unrelated pods in the cluster: "+
		"the caches hold Keelson's own pods and slimmed nodes only, so the chart's 64 MiB request and 256 MiB limit "+
		"leave room.\n", float64(maxRSS)/(1<<20), r.Plan.RollingNodes, r.Plan.Unrelated)
	fmt.Fprintf(&b, "- **Upgrades**: a `helm upgrade` that rolls a controller leaves it without a leader for %.2f s "+
		"(median), not the %s lease duration: the old leader releases its lease on SIGTERM.\n",
		r.HandoverMedian.Median.Seconds(), leaseOf(r))
	fmt.Fprintf(&b, "- **WorkloadSizer**: %d sizers over existing Deployments all report `Sized` %.1f s after they are "+
		"created; idle afterwards, the sizer writes %d times in %.0f s.\n", r.Sizer.Sizers, r.Sizer.ToSized.Seconds(),
		r.Sizer.SteadyWrites, r.Sizer.Idle.To.Sub(r.Sizer.Idle.From).Seconds())
	fmt.Fprintf(&b, "- **Pipeline**: a pipeline costs %.2f s per step over applying the same Deployments and Services "+
		"by hand.\n", r.Pipeline.OverheadPerStep.Seconds())
	return b.String()
}

// rates renders reconciles per second by controller, in binaryNames order.
func rates(m map[string]float64) string {
	parts := make([]string, 0, len(binaryNames))
	for _, name := range binaryNames {
		parts = append(parts, fmt.Sprintf("%s %.2f", name, m[name]))
	}
	return strings.Join(parts, ", ")
}
