// Command bench measures Keelson against the built-in controllers on the local cluster, side by side in one run
// (ratios within a run are trustworthy on a noisy machine; absolute times are not). Writes are attributed from the
// apiserver's audit log, never from counters inside Keelson.
//
//	bin/tools/bench --quick     (make bench-quick: small N, prints the ratio table)
//	bin/tools/bench             (make bench: N = 100, 500, 1000; writes docs/benchmarks.md, plots and JSON)
//
// The cluster must be up with the chart installed (make dev does both).
//
// Run it from the repository's root; make builds it into bin/tools/ (go -C tools build -o ../bin/tools/bench ./bench).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/tools/internal/audit"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	kubeconfig, auditLog, clusterTool, clusterDir, release, releaseNS, out, nodes string
	quick, keep                                                                   bool
	reps, sizersOnly, modelCache                                                  int
}

// parseOptions reads the flags into options, and the plan they ask for.
func parseOptions(args []string) (options, Plan, error) {
	// Its own flag set: a package it imports registers --kubeconfig on the global one.
	flag := flag.NewFlagSet("bench", flag.ExitOnError)
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", ".cluster/kubeconfig", "the local cluster's kubeconfig")
	flag.StringVar(&o.auditLog, "audit-log", ".cluster/logs/audit.log", "the apiserver's audit log")
	flag.StringVar(&o.clusterTool, "cluster-tool", "bin/keelson-cluster", "the cluster tool, to resize the simulated node pool")
	flag.StringVar(&o.clusterDir, "cluster-dir", ".cluster", "the cluster's directory")
	flag.StringVar(&o.release, "release", "keelson", "the chart's release name")
	flag.StringVar(&o.releaseNS, "release-namespace", "keelson-system", "the chart's namespace")
	flag.BoolVar(&o.quick, "quick", false, "small sizes, a few minutes; prints the tables, writes nothing under docs/")
	flag.BoolVar(&o.keep, "keep", false, "leave the benchmark's namespaces and objects in the cluster when done (to look at them)")
	// --nodes and --reps, like --quick, print the tables and write nothing under docs/.
	flag.StringVar(&o.out, "out", "docs", "where docs/benchmarks.md, its plots and JSON go (full runs only)")
	flag.StringVar(&o.nodes, "nodes", "", "comma-separated node counts instead of the plan's, to explore (e.g. 1000)")
	flag.IntVar(&o.reps, "reps", 0, "DaemonSet repetitions instead of the plan's (even), to explore")
	flag.IntVar(&o.sizersOnly, "sizers-only", 0, "run only the WorkloadSizer benchmark with this many sizers, to explore")
	flag.IntVar(&o.modelCache, "model-cache", 0, "run only the pipeline model-cache benchmark, with this many pairs (cold, from the cache); "+
		"with --out, rewrite its section of benchmarks.md")
	if err := flag.Parse(args); err != nil {
		return o, Plan{}, err
	}
	plan := fullPlan
	if o.quick {
		plan = quickPlan
	}
	if o.nodes != "" {
		plan.Nodes = nil
		plan.ScaleNodes = nil // exploring one size measures that size only
		for _, f := range strings.Split(o.nodes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return o, plan, fmt.Errorf("--nodes: %q is not a node count", f)
			}
			plan.Nodes = append(plan.Nodes, n)
		}
	}
	if o.reps > 0 {
		plan.Reps = o.reps
	}
	plan.RollingNodes = plan.Nodes[len(plan.Nodes)-1]
	return o, plan, checkPlan(plan)
}

// runner is one full run: the cluster, the options, the users whose writes are counted, and the results so far.
type runner struct {
	ctx  context.Context
	c    client.Client
	o    options
	plan Plan
	res  *Results
	// users are the DaemonSet controllers' users, by implementation; the others are the sizer's and the pipeline
	// controller's; steadyUsers are every controller's, by name in the steady-state table.
	users                   map[string]string
	sizerUser, pipelineUser string
	steadyUsers             map[string]string
	// The namespaces of the DaemonSets, sizers and pipelines.
	dsNS, szNS, plNS string
	// scr reads the controllers' metrics.
	scr *metrics.Scraper
}

func run() error {
	o, plan, err := parseOptions(os.Args[1:])
	if err != nil {
		return err
	}
	c, cfg, err := localcluster.Client(o.kubeconfig, 200, 400)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if o.modelCache > 0 {
		dir := o.out
		if o.quick {
			dir = ""
		}
		return benchModelCache(ctx, c, o.modelCache, dir)
	}
	if err := reset(ctx, c); err != nil {
		return err
	}
	// Objects left behind would stand in the way of what runs next on the cluster: the chart refuses to turn a
	// controller off while objects of its kind exist, for one.
	defer func() {
		if o.keep {
			return
		}
		if err := reset(ctx, c); err != nil {
			fmt.Fprintf(os.Stderr, "bench: removing the benchmark's objects: %v\n", err)
		}
	}()
	r := &runner{ctx: ctx, c: c, o: o, plan: plan, res: &Results{Plan: plan, Started: time.Now(), Machine: describeMachine(),
		RSS: map[string]int64{}, FirstCounts: FirstCounts(plan.Reps, []string{implKeelson, implBuiltin})}}
	res := r.res
	if res.Setup, err = readClusterSetup(); err != nil {
		return err
	}
	auditEvents0, auditErrors0, err := auditCounters(ctx, cfg)
	if err != nil {
		return err
	}
	if res.MemoryRequest, res.MemoryLimit, err = memorySettings(ctx, c, o.releaseNS, o.release); err != nil {
		return err
	}
	r.setUsers()

	// DaemonSet convergence at each N and the rolling update at the largest.
	if r.dsNS, err = r.namespace("bench-daemonset"); err != nil {
		return err
	}
	scr, err := metrics.NewScraper(ctx, c, r.dsNS, o.releaseNS, o.release)
	if err != nil {
		return err
	}
	r.scr = scr
	if o.sizersOnly > 0 {
		return r.exploreSizers()
	}
	if err := r.daemonSets(); err != nil {
		return err
	}
	if err := r.sizersAndPipelines(); err != nil {
		return err
	}
	if err := r.steady(scr); err != nil {
		return err
	}
	if err := r.handovers(); err != nil {
		return err
	}

	// The audit log is complete only if the apiserver dropped none of the run's events.
	auditEvents1, auditErrors1, err := auditCounters(ctx, cfg)
	if err != nil {
		return err
	}
	res.AuditEvents, res.AuditErrors = auditEvents1-auditEvents0, auditErrors1-auditErrors0
	if res.AuditErrors > 0 {
		return fmt.Errorf("the apiserver failed to record %.0f audit events during the run (%s, mode %s): every write "+
			"count could be low", res.AuditErrors, auditErrorMetric, res.Setup.AuditMode)
	}
	writers, err := r.attributeWrites()
	if err != nil {
		return err
	}
	return report(*res, writers, o)
}

// exploreSizers runs the sizer benchmark alone, at o.sizersOnly sizers, and writes nothing.
func (r *runner) exploreSizers() error {
	o := r.o
	qps, burst, err := clientBudget(r.ctx, r.c, o.releaseNS, o.release+"-workload-sizer")
	if err != nil {
		return err
	}
	return exploreSizers(r.ctx, r.c, r.scr, o.clusterTool, o.clusterDir, o.auditLog, r.namespace, r.sizerUser, o.sizersOnly,
		r.plan.Idle, qps, burst)
}

// setUsers names the users whose writes the audit log counts: each controller's ServiceAccount, and the built-in
// DaemonSet controller's.
func (r *runner) setUsers() {
	o := r.o
	r.users = map[string]string{implKeelson: keelsonUser(o.releaseNS, o.release, "daemonset-controller"), implBuiltin: builtinDaemonSetUser}
	r.sizerUser = keelsonUser(o.releaseNS, o.release, "workload-sizer")
	r.pipelineUser = keelsonUser(o.releaseNS, o.release, "pipeline-controller")
	r.steadyUsers = map[string]string{"daemonset-controller": r.users[implKeelson], "workload-sizer": r.sizerUser,
		"pipeline-controller": r.pipelineUser, builtinDaemonSet: builtinDaemonSetUser}
}

// report prints a run's results and fails on a measurement missing or a trial stalled; a full run's results then
// become the documentation.
func report(res Results, writers []expectedWriter, o options) error {
	fmt.Println()
	fmt.Println(auditNote(res))
	fmt.Println()
	fmt.Print(summaryText(res))
	if missing := missingMeasurements(res, writers); len(missing) > 0 {
		return fmt.Errorf("measurements missing, so the results above prove nothing about them:\n  %s", strings.Join(missing, "\n  "))
	}
	if stalled := stalledTrials(timedTrials(res)); len(stalled) > 0 {
		return fmt.Errorf("trials stalled, which their medians would hide:\n  %s", strings.Join(stalled, "\n  "))
	}
	if o.quick || o.nodes != "" || o.reps > 0 {
		return nil // only a full run's results become the documentation
	}
	return writeDocs(res, o.out)
}

// namespace makes a namespace of the benchmark (one left by an earlier run is reused).
func (r *runner) namespace(name string) (string, error) {
	err := r.c.Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name, client.IgnoreAlreadyExists(err)
}

// record prints DaemonSet trials and keeps them.
func (r *runner) record(ts []trial) {
	for _, t := range ts {
		fmt.Printf("%-8s %-15s N=%-5d rep %d: %.2fs\n", t.Impl, t.Bench, t.Nodes, t.Rep, t.Duration.Seconds())
	}
	r.res.DaemonSet = append(r.res.DaemonSet, ts...)
}

// daemonSets runs the DaemonSet trials: the scale point first, then convergence at each N, the rolling update and
// the updates in place at the largest.
func (r *runner) daemonSets() error {
	ctx, c, o, plan, res := r.ctx, r.c, r.o, r.plan, r.res
	// The scale points first, while nothing else of the benchmark is in the cluster: one convergence per
	// implementation at each pool size, and Keelson's memory and longest passes once its DaemonSet has converged.
	res.ScaleRSS, res.ScalePassP99 = map[int]int64{}, map[int]float64{}
	for _, n := range plan.ScaleNodes {
		if err := resizePool(ctx, c, o.clusterTool, o.clusterDir, n); err != nil {
			return err
		}
		for _, impl := range Order(0, []string{implKeelson, implBuiltin}) {
			shape := trialShape{convergence: benchScale}
			if impl == implKeelson {
				before, err := r.passBuckets()
				if err != nil {
					return err
				}
				shape.converged = func() error {
					rss, err := RSS("daemonset-controller")
					for _, v := range rss {
						res.ScaleRSS[n] = max(res.ScaleRSS[n], v)
					}
					if err != nil {
						return err
					}
					after, err := r.passBuckets()
					p99 := metrics.Quantile(before, after, 0.99)
					if math.IsInf(p99, 1) {
						p99 = noBound
					}
					res.ScalePassP99[n] = p99
					return err
				}
			}
			ts, err := daemonSetTrial(ctx, c, impl, r.dsNS, n, 0, shape)
			if err != nil {
				return err
			}
			r.record(ts)
		}
	}
	for _, n := range plan.Nodes {
		if err := resizePool(ctx, c, o.clusterTool, o.clusterDir, n); err != nil {
			return err
		}
		for rep := range plan.Reps {
			for _, impl := range Order(rep, []string{implKeelson, implBuiltin}) {
				ts, err := daemonSetTrial(ctx, c, impl, r.dsNS, n, rep, trialShape{roll: n == plan.RollingNodes})
				if err != nil {
					return err
				}
				r.record(ts)
			}
			if n == plan.RollingNodes {
				if err := r.inPlace(n, rep); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// inPlace runs the same image change made in place, without and with the readiness gate (their order alternating
// too); compared with the built-in's rolling update just before.
func (r *runner) inPlace(n, rep int) error {
	modes := []inPlaceMode{inPlaceNoGate, inPlaceGated}
	if rep%2 == 1 {
		modes[0], modes[1] = modes[1], modes[0]
	}
	for _, mode := range modes {
		ts, err := daemonSetTrial(r.ctx, r.c, implKeelson, r.dsNS, n, rep, trialShape{inPlace: mode})
		if err != nil {
			return err
		}
		r.record(ts)
	}
	return nil
}

// passBuckets reads the daemonset-controller's histogram of pass durations, summed over its replicas (only the
// leader reconciles).
func (r *runner) passBuckets() (map[float64]float64, error) {
	texts, err := r.scr.Scrape(r.ctx, "daemonset-controller")
	if err != nil {
		return nil, err
	}
	out := map[float64]float64{}
	for _, t := range texts {
		for le, v := range metrics.Buckets(t.Text, metrics.ReconcileTime, "daemonset") {
			out[le] += v
		}
	}
	return out, nil
}

// sizersAndPipelines runs the sizer and pipeline benchmarks, with the pool at its largest.
func (r *runner) sizersAndPipelines() error {
	var err error
	if r.szNS, err = r.namespace("bench-sizer"); err != nil {
		return err
	}
	if r.res.Sizer, err = sizerBench(r.ctx, r.c, r.szNS, r.plan.Sizers); err != nil {
		return err
	}
	if r.res.Sizer.QPS, r.res.Sizer.Burst, err = clientBudget(r.ctx, r.c, r.o.releaseNS, r.o.release+"-workload-sizer"); err != nil {
		return err
	}
	fmt.Printf("sizer: %d sizers Sized in %.2fs\n", r.plan.Sizers, r.res.Sizer.ToSized.Seconds())

	if r.plNS, err = r.namespace("bench-pipeline"); err != nil {
		return err
	}
	if err := modelsClaim(r.ctx, r.c, r.plNS); err != nil {
		return err
	}
	if r.res.Pipeline, err = pipelineBench(r.ctx, r.c, r.plNS, r.plan.Pipelines, r.plan.PipelineReps); err != nil {
		return err
	}
	o := r.res.Pipeline.Overhead
	fmt.Printf("pipeline: %d pairs, overhead per pipeline median %+.3fs (p10 %+.3fs, p90 %+.3fs)\n",
		len(r.res.Pipeline.Pairs), o.Median.Seconds(), o.P10.Seconds(), o.P90.Seconds())
	return nil
}

// steady measures the steady state and memory: the largest pool, a DaemonSet of each kind on every node, the sizers
// and the pipelines still there, and unrelated pods the filtered caches must not hold.
func (r *runner) steady(scr *metrics.Scraper) error {
	ctx, c, res, largest := r.ctx, r.c, r.res, r.plan.RollingNodes
	unNS, err := r.namespace("bench-unrelated")
	if err != nil {
		return err
	}
	if err := unrelatedPods(ctx, c, unNS, r.plan.Unrelated, largest); err != nil {
		return err
	}
	for _, impl := range []string{implKeelson, implBuiltin} {
		if err := holdDaemonSet(ctx, c, impl, r.dsNS, "steady-"+impl, largest); err != nil {
			return err
		}
	}
	if res.Steady.Held, err = heldObjects(ctx, c, r.dsNS, r.szNS, r.plNS); err != nil {
		return err
	}
	if _, err := settle(ctx, r.o.auditLog, r.steadyUsers, settleQuiet, 5*time.Minute); err != nil {
		return err
	}
	if res.Steady.Window, err = scr.Idle(ctx, binaryNames, r.plan.Idle); err != nil {
		return err
	}
	res.Steady.Missable = missablePeriods(r.plan.Idle, periodicRequeues)
	// Memory is read once the burst of converging is long over: what a cluster pays is the steady resident size,
	// and Go returns the memory a burst used to the system within seconds to minutes.
	for _, b := range binaryNames {
		rss, err := RSS(b)
		if err != nil {
			return err
		}
		for _, v := range rss {
			res.RSS[b] = max(res.RSS[b], v)
		}
		fmt.Printf("rss %s: %.1f MiB (largest of %d processes)\n", b, float64(res.RSS[b])/(1<<20), len(rss))
	}
	return nil
}

// handovers measures the workload-sizer's leader handovers.
func (r *runner) handovers() error {
	if err := ensureProbe(r.ctx, r.c, r.szNS); err != nil {
		return err
	}
	for i := range r.plan.Handovers {
		h, err := handover(r.ctx, r.c, r.szNS, r.o.releaseNS, r.o.release+"-workload-sizer", int32(i%2+1))
		if err != nil {
			return err
		}
		fmt.Printf("handover %d: %.2fs (lease duration %s)\n", i, h.Duration.Seconds(), h.LeaseDuration)
		r.res.Handovers = append(r.res.Handovers, h)
	}
	return nil
}

// attributeWrites counts each phase's writes from the audit log, now that it holds everything, builds the reports,
// and returns the writers each phase must show.
func (r *runner) attributeWrites() ([]expectedWriter, error) {
	res := r.res
	events, err := audit.ReadWritesSince(r.o.auditLog, res.Started)
	if err != nil {
		return nil, err
	}
	var writers []expectedWriter
	for i := range res.DaemonSet {
		// The window ends when the status said converged: the next phase (a rolling update, a deletion) starts then.
		t := &res.DaemonSet[i]
		t.Writes = audit.Count(events, t.start, t.end)[r.users[t.Impl]]
		writers = append(writers, expectedWriter{What: fmt.Sprintf("DaemonSet %s %s N=%d rep %d", t.Impl, t.Bench, t.Nodes, t.Rep),
			User: r.users[t.Impl], Writes: sumWrites(t.Writes)})
	}
	sizing := audit.Count(events, res.Sizer.start, res.Sizer.end)
	res.Sizer.Writes, res.Sizer.ByKind = sizing.Total(r.sizerUser), sizing[r.sizerUser]
	res.Sizer.Floor = writeFloor(res.Sizer.Writes, res.Sizer.QPS, res.Sizer.Burst)
	writers = append(writers, expectedWriter{What: "sizers to Sized", User: r.sizerUser, Writes: res.Sizer.Writes},
		expectedWriter{What: "pipelines to Ready", User: r.pipelineUser,
			Writes: audit.Count(events, res.Pipeline.start, res.Pipeline.end).Total(r.pipelineUser)})
	inWindow := audit.Count(events, res.Steady.Window.From, res.Steady.Window.To)
	res.Steady.Writes = map[string]map[string]int{}
	for name, u := range r.steadyUsers {
		res.Steady.Writes[name] = inWindow[u]
	}
	var hs []time.Duration
	for _, h := range res.Handovers {
		hs = append(hs, h.Duration)
	}
	res.HandoverMedian = Summarize(hs)
	res.Convergence = buildReport(filterBench(res.DaemonSet, benchConvergence))
	res.RollingUpdate = buildReport(filterBench(res.DaemonSet, benchRollingUpdate))
	res.InPlaceUpdate = buildReport(inPlaceTrials(res.DaemonSet, benchInPlace))
	res.InPlaceGated = buildReport(inPlaceTrials(res.DaemonSet, benchInPlaceGated))
	res.Scale = buildReport(filterBench(res.DaemonSet, benchScale))
	return writers, nil
}

// benchNamespaces hold everything a run makes; reset removes what an earlier run left.
var benchNamespaces = []string{"bench-daemonset", "bench-sizer", "bench-pipeline", "bench-unrelated"}

// reset deletes an earlier run's namespaces and volume and waits until they are gone.
func reset(ctx context.Context, c client.Client) error {
	for _, n := range benchNamespaces {
		if err := client.IgnoreNotFound(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})); err != nil {
			return err
		}
	}
	if err := metrics.DeleteReader(ctx, c); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "keelson-bench-models"}}
	if err := client.IgnoreNotFound(c.Delete(ctx, pv)); err != nil {
		return err
	}
	return poll(ctx, 10*time.Minute, func() (bool, error) {
		for _, n := range benchNamespaces {
			err := c.Get(ctx, client.ObjectKey{Name: n}, &corev1.Namespace{})
			if err == nil {
				return false, nil
			}
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
		}
		err := c.Get(ctx, client.ObjectKey{Name: pv.Name}, pv)
		return err != nil, client.IgnoreNotFound(err)
	})
}
