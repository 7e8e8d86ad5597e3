package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

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
	sec, ssec := fmtSec, fmtSignedSec
	fmt.Fprintf(&b, "### DaemonSet convergence (create → all N pods available)\n\n%s\n", r.Convergence.Table())
	fmt.Fprintf(&b, "### DaemonSet rolling update (N = %d, maxUnavailable 10%%, an image change; both recreate every pod)\n\n%s\n",
		r.Plan.RollingNodes, r.RollingUpdate.Table())
	fmt.Fprintf(&b, "### DaemonSet image update in place (N = %d, maxUnavailable 10%%): Keelson with `inPlace: IfPossible` "+
		"against the built-in's rolling update above\n\nWithout the readiness gate (`inPlaceReadinessGate: Disabled`, a daemon no "+
		"Service sends traffic to):\n\n%s\nWith the readiness gate (the default: the pod leaves its Services before its "+
		"container stops; three writes per pod):\n\n%s\n", r.Plan.RollingNodes, r.InPlaceUpdate.Table(), r.InPlaceGated.Table())
	if len(r.Plan.ScaleNodes) > 0 {
		fmt.Fprintf(&b, "### DaemonSet cost as the pool grows (one convergence per implementation at each N)\n\n%s\n%s\n",
			r.Scale.Table(), scaleCostTable(r))
	}
	fmt.Fprintf(&b, "Over the %d repetitions at each N, Keelson went first %d times and the built-in %d times.\n\n",
		r.Plan.Reps, r.FirstCounts[implKeelson], r.FirstCounts[implBuiltin])
	// The worst ratio, and the largest excess of Keelson's writes per node over the built-in's, across every N.
	worstRatio, keelsonWrites := 0.0, -1e9
	for _, row := range append(append(Report{}, r.Convergence...), r.RollingUpdate...) {
		worstRatio = max(worstRatio, row.Ratio)
		keelsonWrites = max(keelsonWrites, row.KeelsonWritesPerNode-row.BuiltinWritesPerNode)
	}
	fmt.Fprintf(&b, "### What the writes are (N = %d, per trial, averaged over the repetitions)\n\nConvergence:\n\n%s\n"+
		"Rolling update:\n\n%s\nImage update, Keelson in place without the gate:\n\n%s\nWith the gate:\n\n%s\n",
		r.Plan.RollingNodes, resourceTable(resourceWrites(r.DaemonSet, benchConvergence, r.Plan.RollingNodes)),
		resourceTable(resourceWrites(r.DaemonSet, benchRollingUpdate, r.Plan.RollingNodes)),
		resourceTable(resourceWrites(inPlaceTrials(r.DaemonSet, benchInPlace), benchInPlace, r.Plan.RollingNodes)),
		resourceTable(resourceWrites(inPlaceTrials(r.DaemonSet, benchInPlaceGated), benchInPlaceGated, r.Plan.RollingNodes)))
	window := r.Steady.Window.To.Sub(r.Steady.Window.From)
	fmt.Fprintf(&b, "### Steady state (N = %d, %s idle, every controller holding objects)\n\n%s\n%s\n\n",
		r.Plan.RollingNodes, sec(window), steadyTable(r.Steady), missableText(window, r.Steady.Missable))
	steadyTotal := keelsonSteadyWrites(r.Steady)
	fmt.Fprintf(&b, "### Memory (N = %d nodes, the objects above, %d unrelated pods; read at the end of the idle window)\n\n"+
		"| controller | RSS | request | limit |\n|---|---|---|---|\n", r.Plan.RollingNodes, r.Plan.Unrelated)
	maxRSS := int64(0)
	for _, name := range binaryNames {
		fmt.Fprintf(&b, "| %s | %.1f MiB | %s | %s |\n", name, float64(r.RSS[name])/(1<<20), mib(r.MemoryRequest[name]), mib(r.MemoryLimit[name]))
		maxRSS = max(maxRSS, r.RSS[name])
	}
	fmt.Fprintf(&b, "\n### Leader handover (workload-sizer, %d leader pod deletions)\n\nmedian %s (min %s, max %s); lease duration %s\n",
		len(r.Handovers), sec(r.HandoverMedian.Median), sec(r.HandoverMedian.Min), sec(r.HandoverMedian.Max), leaseOf(r))
	fmt.Fprintf(&b, "\n### WorkloadSizer\n\n%d sizers over existing Deployments: all Sized in %s, with %d writes by the sizer "+
		"until then (%.2f per sizer, from the audit log). At the sizer's client budget (%.0f writes a second after a burst "+
		"of %.0f) those writes take at least %s: %.2f times that floor.\n\n%s",
		r.Sizer.Sizers, sec(r.Sizer.ToSized), r.Sizer.Writes, perSizer(r.Sizer), r.Sizer.QPS, r.Sizer.Burst,
		sec(r.Sizer.Floor), r.Sizer.floorRatio(), sizerWritesTable(r.Sizer))
	p, o := r.Pipeline, r.Pipeline.Overhead
	fmt.Fprintf(&b, "\n### Pipeline (%d pairs: %d pipelines × %d repetitions, %d steps each; Keelson first in %d, bare first in %d)\n\n"+
		"| | median | p10 | p90 | min | max |\n|---|---|---|---|---|---|\n", len(p.Pairs), p.Pipelines, p.Reps, p.Steps,
		p.FirstCounts[sideKeelson], p.FirstCounts[sideBare])
	for _, row := range []struct {
		name string
		s    Summary
		f    func(time.Duration) string
	}{{"pipeline create → Ready", p.Keelson, sec}, {"bare twin create → available", p.Bare, sec}, {"overhead per pipeline", o, ssec}} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row.name, row.f(row.s.Median), row.f(row.s.P10), row.f(row.s.P90), row.f(row.s.Min), row.f(row.s.Max))
	}
	b.WriteString(targetsText(r, worstRatio, keelsonWrites, steadyTotal, maxRSS))
	return b.String()
}

// fmtSec and fmtSignedSec write a duration in seconds, as the tables show them.
func fmtSec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func fmtSignedSec(d time.Duration) string { return fmt.Sprintf("%+.3f s", d.Seconds()) }

// targetsText is the table of targets, each with the run's result and whether it is met: worstRatio and
// keelsonWrites are the DaemonSet's worst convergence ratio and excess of writes per node at every N, steadyTotal
// the Keelson controllers' writes in the idle window, maxRSS the largest controller's.
func targetsText(r Results, worstRatio, keelsonWrites float64, steadyTotal int, maxRSS int64) string {
	var b strings.Builder
	sec, ssec := fmtSec, fmtSignedSec
	p, o := r.Pipeline, r.Pipeline.Overhead
	fmt.Fprintf(&b, "\n### Targets\n\n| target | result | |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| DaemonSet Keelson / built-in ≤ 1.0 at every N | worst %.2f | %s |\n", worstRatio, verdict(worstRatio <= 1.0))
	fmt.Fprintf(&b, "| writes per node ≤ built-in | worst difference %+.2f | %s |\n", keelsonWrites, verdict(keelsonWrites <= 0))
	if n := len(r.InPlaceUpdate); n > 0 {
		row := r.InPlaceUpdate[n-1]
		fmt.Fprintf(&b, "| image update in place (no gate) / built-in rolling update ≤ 0.55 | %.2f | %s |\n", row.Ratio, verdict(row.Ratio > 0 && row.Ratio <= 0.55))
		fmt.Fprintf(&b, "| image update in place (no gate): writes per node ≤ 1.1 | %.2f | %s |\n", row.KeelsonWritesPerNode,
			verdict(row.KeelsonWritesPerNode > 0 && row.KeelsonWritesPerNode <= 1.1))
	}
	fmt.Fprintf(&b, "| steady-state writes = 0 (every Keelson controller) | %d | %s |\n", steadyTotal, verdict(steadyTotal == 0))
	fmt.Fprintf(&b, "| RSS ≤ 100 MiB per controller | largest %.1f MiB | %s |\n", float64(maxRSS)/(1<<20), verdict(maxRSS > 0 && maxRSS <= 100<<20))
	fmt.Fprintf(&b, "| leader handover < 2 s | median %s | %s |\n", sec(r.HandoverMedian.Median), verdict(len(r.Handovers) > 0 && r.HandoverMedian.Median < 2*time.Second))
	fmt.Fprintf(&b, "| %d sizers Sized < 60 s | %s | %s |\n", r.Sizer.Sizers, sec(r.Sizer.ToSized), verdict(r.Sizer.ToSized > 0 && r.Sizer.ToSized < time.Minute))
	fmt.Fprintf(&b, "| %d sizers Sized ≤ %.1f × their write floor | %.2f × (%s for %d writes) | %s |\n", r.Sizer.Sizers,
		sizerFloorTarget, r.Sizer.floorRatio(), sec(r.Sizer.Floor), r.Sizer.Writes,
		verdict(r.Sizer.floorRatio() > 0 && r.Sizer.floorRatio() <= sizerFloorTarget))
	if n := len(r.Plan.ScaleNodes); n > 0 {
		largest := r.Plan.ScaleNodes[n-1]
		row := scaleRow(r.Scale, largest)
		fmt.Fprintf(&b, "| DaemonSet Keelson / built-in ≤ 1.0 at N = %d | %.2f | %s |\n", largest, row.Ratio, verdict(row.Ratio > 0 && row.Ratio <= 1.0))
		p99 := r.ScalePassP99[largest]
		fmt.Fprintf(&b, "| longest pass (p99) < 2 s at N = %d | %s | %s |\n", largest, passText(p99), verdict(p99 > 0 && p99 <= maxScalePass))
		rss := r.ScaleRSS[largest]
		fmt.Fprintf(&b, "| daemonset-controller RSS ≤ 250 MiB at N = %d | %.1f MiB | %s |\n", largest, float64(rss)/(1<<20), verdict(rss > 0 && rss <= maxScaleRSS))
	}
	fmt.Fprintf(&b, "| pipeline overhead < 1 s per pipeline | median %s (p90 %s) | %s |\n", ssec(o.Median), ssec(o.P90), verdict(len(p.Pairs) > 0 && o.Median < time.Second))
	return b.String()
}

func leaseOf(r Results) string {
	if len(r.Handovers) == 0 {
		return "-"
	}
	return r.Handovers[0].LeaseDuration.String()
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
	doc := fmt.Sprintf(benchmarksDoc, r.Started.UTC().Format("2006-01-02"), r.Plan.Reps, r.Machine.CPUs, r.Machine.MemoryGiB,
		r.Machine.Kernel, r.Machine.Commit, r.Machine.Go, nodeGraceNote(r), scalePoints(r.Plan.ScaleNodes), auditNote(r), r.Pipeline.Steps, r.Pipeline.Steps, steadyNote(r),
		meaning(r), summaryText(r))
	// The model-cache section is make bench-model-cache's: kept as it is.
	if old, err := os.ReadFile(filepath.Join(dir, "benchmarks.md")); err == nil {
		if kept := keptSection(string(old), modelCacheMarkers); kept != "" {
			doc = strings.TrimRight(doc, "\n") + "\n\n" + kept + "\n"
		}
	}
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

What does Keelson cost a cluster, next to what it replaces? Every number here but the pipeline model cache's (which
` + "`make bench-model-cache`" + ` measures on the real node, and dates in its own section) comes from one run of
` + "`make bench`" + ` (run %s) on the local cluster ([local-cluster.md](local-cluster.md)): Keelson and the built-in controller on the
same simulated nodes, in the same run, alternating which goes first over %d repetitions. The machine is
noisy (%d cores, %d GiB, kernel %s; commit %s, %s): trust the ratios within the run more than the absolute times.

## Method

- **Nodes** are kwok nodes (` + "`cluster nodes --fake-nodes N`" + `), Ready and free of the not-ready taint before each
  measurement, and every other DaemonSet in the cluster (` + "`make dev`" + `'s sample runs on every node) has caught up with
  the resized pool (its pods on the nodes removed deleted too), so that its writes neither compete with a trial nor
  land in its window. Pods on simulated nodes are marked Running and Ready by kwok; nothing is pulled or run. %s
- **DaemonSet convergence**: create → the DaemonSet's own status says N pods updated and available, polled every
  200 ms; then the DaemonSet is deleted and its pods waited out before the next trial. Keelson's DaemonSet and
  apps/v1's have the same pod template (a pause container, a toleration of the simulated nodes' taint, a node
  selector for them) and both roll with maxUnavailable 10%%. The implementation that goes first alternates, and
  the number of repetitions is even, so each goes first equally often.
- **Rolling updates** change the container's image at the largest N, once each implementation has converged; both
  recreate every pod. Two more trials in each repetition, after the pair (so the built-in never goes after them),
  make the same image change to Keelson DaemonSets with ` + "`inPlace: IfPossible`" + `, without and with the readiness
  gate, in alternating order; their rows compare them with the built-in's rolling update of the same repetitions.
  kwok plays the kubelet's part through stages of the local cluster's own (tools/cluster/kwok-in-place-stage.yaml):
  a container whose image changed restarts (a new container ID, one more restart), and a pod whose readiness gates
  are all True becomes Ready. (kwok's own stage sets a gate's condition True when a pod starts, which a kubelet never
  does: a gated pod's first write, opening its gate, is not made here.)
- **The scale points** (N = %s when shown) run first, smallest first, one convergence per implementation at each
  (Keelson first, so the order favours neither repeatedly but is not balanced); once Keelson's DaemonSet has
  converged, they read the daemonset-controller's resident size and the bucket of its pass-time histogram that holds
  the 99th percentile of the passes it made meanwhile.
- **Client budgets are equal**: every Keelson controller runs with the chart's default ` + "`kubeAPI`" + ` and the local
  cluster gives kube-controller-manager the same (its own default, 20/30, would cap the apps/v1 DaemonSet controller
  at about 20 pod creations per second, and the comparison would measure that). Both DaemonSets' pods are bound by
  the same kube-scheduler.
- **Writes** are counted in the apiserver's audit log (creates, updates, patches, deletes, status writes by either
  verb), attributed to the user that made them: kube-controller-manager runs with per-controller service accounts
  (` + "`system:serviceaccount:kube-system:daemon-set-controller`" + `), Keelson with its chart's. Nothing inside Keelson
  counts. %s A run fails when a controller that must have written (a DaemonSet that converged, sizers that became
  Sized, pipelines that became Ready) has no write in the log, since its zero would otherwise read as a result.
- **Pipeline overhead**: an unmeasured template pipeline is made first, and its Deployments and Services become the
  model of every bare twin (same image, args, env, probes, claim, tolerations; pinned to the same nodes as its
  pipeline, by the same node affinity). Then each pair, one at a time: a %d-step Pipeline from create to its status
  saying Ready for its generation, and its twin from the first create to all %d Deployments available, the side
  going first alternating pair by pair; both are polled every 50 ms. The overhead is the pair's difference, for the
  whole pipeline (its steps start in parallel: dividing by them would hide a delay), summarized over every pair.
- **Steady state** is an idle window at the end, with every controller holding objects (a DaemonSet of each kind on
  every node, the sizers and their Deployments, the pipelines and their twins), opened once none of the measured
  controllers has written for 130 s (the tail of the last convergence is not steady state, nor the write-back of an
  event's count, up to two minutes after the write before it); the reconciles each Keelson
  controller finished in it are read from its own ` + "`controller_runtime_reconcile_total`" + ` (scraped from
  ` + "`/metrics`" + ` with a token allowed to read it). %s
- **Memory** is each controller process's VmRSS on the node, the largest replica's, read at the end of the idle
  window, compared with the memory request and limit of the controller's Deployment as deployed.
- **Leader handover** runs from the request deleting the workload-sizer's leader pod (what a rollout does to it) to
  a new leader holding the lease and having reconciled a probe object changed once it held it (so no write of the
  old leader, still running while its pod terminates, counts as the new one's).
- **Stalls fail the run**: any trial (a DaemonSet's, a pipeline's or its bare twin's, a leader handover) slower than
  three times the median of its peers (the same benchmark, implementation and N), and by 5 s at least, is named, and no
  page is written: a median would hide it.
- Raw results: [benchmarks/results.json](benchmarks/results.json). Rerun with ` + "`make bench`" + ` (` + "`make bench-quick`" + `: small
  sizes, prints the tables; ` + "`bin/tools/bench --nodes 1000 --reps 2`" + ` explores one size and writes nothing).

![convergence](benchmarks/convergence.png)
![writes per node](benchmarks/writes-per-node.png)

## What this means for you

%s
## Results

%s
`

// nodeGraceNote says how long a simulated node may miss its lease renewals before it is taken for unreachable,
// from what the run read off kube-controller-manager, and why when it is longer than the default.
func nodeGraceNote(r Results) string {
	d, err := time.ParseDuration(r.Setup.NodeMonitorGracePeriod)
	if err != nil {
		return "kube-controller-manager's node grace period (`--node-monitor-grace-period`) was not recorded."
	}
	out := fmt.Sprintf("kube-controller-manager takes a node for unreachable once its lease has gone %s s without renewal "+
		"(`--node-monitor-grace-period`", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	if d == defaultNodeMonitorGracePeriod {
		return out + ", its default)."
	}
	out += fmt.Sprintf(", read from its command line; its default is %.0f s)", defaultNodeMonitorGracePeriod.Seconds())
	if d < defaultNodeMonitorGracePeriod {
		return out + "."
	}
	return out + ": kwok renews the leases of many simulated nodes late on few cores, and a node taken for " +
		"unreachable mid-trial has its pods marked not ready, which would slow a trial for a reason that is not the " +
		"controller's."
}

// auditNote says how the audit log was kept and what it leaves out, from what the run read off the cluster.
func auditNote(r Results) string {
	out := fmt.Sprintf("The apiserver wrote the log in %s mode", r.Setup.AuditMode)
	if auditCanDrop(r.Setup.AuditMode) {
		out += ", which drops events when its buffer is full"
	} else {
		out += ", which holds a request until its event is written, so none is dropped under load"
	}
	out += fmt.Sprintf("; its %s grew by %.0f during the run (a run with any growth fails).", auditErrorMetric, r.AuditErrors)
	if !r.Setup.LeasesAudited {
		out += " Lease writes are left out of the log for every user (leader-election renewals and node heartbeats"
		if r.Setup.BuiltinLeaderElection {
			out += "; kube-controller-manager runs with leader election too)."
		} else {
			out += "; kube-controller-manager runs here with `--leader-elect=false`, so it makes no such writes, while" +
				" each Keelson controller's leader renews its Lease about once per `leaderElection.retryPeriod`)."
		}
	}
	return out
}

// steadyNote says how long the idle window is against the controllers' periodic writes.
func steadyNote(r Results) string {
	return missableText(r.Steady.Window.To.Sub(r.Steady.Window.From), r.Steady.Missable)
}

// meaning says, in a user's terms, what a run's numbers imply; every conclusion follows from a measurement.
func meaning(r Results) string {
	var b strings.Builder
	if n := len(r.Convergence); n > 0 {
		row := r.Convergence[n-1]
		fmt.Fprintf(&b, "- **Rolling out a DaemonSet to %d nodes** takes %.1f s with Keelson and %.1f s with apps/v1 "+
			"(ratio %.2f: %s).\n", row.Nodes, row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(), row.Ratio, speedWord(row.Ratio))
		b.WriteString(writesSentence(row))
	}
	if n := len(r.RollingUpdate); n > 0 {
		row := r.RollingUpdate[n-1]
		fmt.Fprintf(&b, "- **Updating the image on %d nodes** (10%% unavailable at a time) takes %.1f s with Keelson "+
			"and %.1f s with apps/v1 (ratio %.2f: %s).\n", row.Nodes, row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(),
			row.Ratio, speedWord(row.Ratio))
	}
	if n, g := len(r.InPlaceUpdate), len(r.InPlaceGated); n > 0 && g > 0 {
		row, gated := r.InPlaceUpdate[n-1], r.InPlaceGated[g-1]
		fmt.Fprintf(&b, "- **Updating the image in place on %d nodes** (`inPlace: IfPossible`) takes %.1f s against %.1f s "+
			"for apps/v1's recreate (ratio %.2f), with %.2f writes per node against %.2f, without the readiness gate; "+
			"with it (the default, for pods behind a Service) %.1f s (ratio %.2f) and %.2f writes per node. The pods keep "+
			"their names, UIDs, IPs and nodes.\n", row.Nodes, row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(), row.Ratio,
			row.KeelsonWritesPerNode, row.BuiltinWritesPerNode, gated.Keelson.Median.Seconds(), gated.Ratio, gated.KeelsonWritesPerNode)
	}
	if n := len(r.Scale); n > 0 {
		row := r.Scale[n-1]
		fmt.Fprintf(&b, "- **At %d nodes** a DaemonSet converges in %.1f s with Keelson and %.1f s with apps/v1 (ratio %.2f), "+
			"%.2f writes per node against %.2f; its passes took at most %s (p99), and daemonset-controller then holds %.1f MiB.\n", row.Nodes,
			row.Keelson.Median.Seconds(), row.Builtin.Median.Seconds(), row.Ratio, row.KeelsonWritesPerNode,
			row.BuiltinWritesPerNode, passText(r.ScalePassP99[row.Nodes]), float64(r.ScaleRSS[row.Nodes])/(1<<20))
	}
	b.WriteString(idleSentence(r.Steady, r.Setup))
	b.WriteString(memorySentence(r.RSS, r.MemoryRequest, r.MemoryLimit, r.Plan.RollingNodes, r.Plan.Unrelated))
	lease := time.Duration(0)
	if len(r.Handovers) > 0 {
		lease = r.Handovers[0].LeaseDuration
	}
	b.WriteString(handoverSentence(r.HandoverMedian.Median, lease))
	fmt.Fprintf(&b, "- **WorkloadSizer**: %d sizers over existing Deployments all report `Sized` %.1f s after they are "+
		"created.\n", r.Sizer.Sizers, r.Sizer.ToSized.Seconds())
	b.WriteString(pipelineSentence(r.Pipeline))
	return b.String()
}

// Targets at the largest scale point: the longest pass (p99) and the daemonset-controller's resident size.
const (
	maxScalePass = 2.0       // seconds
	maxScaleRSS  = 250 << 20 // bytes
)

// scaleRow is the report's row at n nodes (a zero row when there is none).
func scaleRow(rep Report, n int) Row {
	for _, row := range rep {
		if row.Nodes == n {
			return row
		}
	}
	return Row{}
}

// scaleCostTable is the cost curve: at each scale point, Keelson's convergence, writes per node, the
// daemonset-controller's resident size and its longest passes.
func scaleCostTable(r Results) string {
	var b strings.Builder
	b.WriteString("| N | Keelson convergence | / built-in | writes per node | daemonset-controller RSS | longest pass (p99) |\n|---|---|---|---|---|---|\n")
	for _, n := range r.Plan.ScaleNodes {
		row := scaleRow(r.Scale, n)
		fmt.Fprintf(&b, "| %d | %.1f s | %.2f | %.2f | %.1f MiB | %s |\n", n, row.Keelson.Median.Seconds(), row.Ratio,
			row.KeelsonWritesPerNode, float64(r.ScaleRSS[n])/(1<<20), passText(r.ScalePassP99[n]))
	}
	b.WriteString("\nThe longest pass is the upper bound of the histogram bucket (controller-runtime's " +
		"`controller_runtime_reconcile_time_seconds`) that holds the 99th percentile of the passes made while the " +
		"DaemonSet converged; the resident size is read once it had.\n")
	return b.String()
}

// passText renders a pass-time bound; noBound marks one past the histogram's last finite bucket.
func passText(seconds float64) string {
	switch {
	case seconds <= 0:
		return "-"
	case seconds >= noBound:
		return "over 60 s"
	}
	return fmt.Sprintf("≤ %g s", seconds)
}

// noBound stands for a quantile past the histogram's last finite bucket (JSON has no infinity).
const noBound = math.MaxFloat64

// perSizer is the sizer's writes per sizer.
func perSizer(s sizerResult) float64 {
	if s.Sizers == 0 {
		return 0
	}
	return float64(s.Writes) / float64(s.Sizers)
}

// sizerWritesTable splits the sizer's writes by verb and resource, per sizer.
func sizerWritesTable(s sizerResult) string {
	if len(s.ByKind) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| write | count | per sizer |\n|---|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(s.ByKind)) {
		fmt.Fprintf(&b, "| %s | %d | %.2f |\n", k, s.ByKind[k], float64(s.ByKind[k])/float64(max(1, s.Sizers)))
	}
	return b.String()
}

// scalePoints renders the scale points as "1000, 5000 and 10000".
func scalePoints(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
