// Command chaos is Keelson's reliability suite for faults: it runs the controllers on the local cluster (the chart,
// a real node and simulated nodes), gives them work, injects faults into them, samples an invariant twice a second
// throughout, and measures how long they take to recover. Faults are injected through the local cluster tool,
// which signals exactly the pods it is told about (by UID, through their cgroups).
//
//	bin/tools/chaos [--quick] [--scenarios daemonset,sizer,pipeline] [--faults N] [--nodes N] [--out docs]
//
// make chaos runs the full form and rewrites the faults section of docs/reliability.md; make chaos-quick runs the
// short form CI runs, prints the results and fails on any violation.
//
// Run it from the repository's root; make builds it into bin/tools/ (go -C tools build -o ../bin/tools/chaos ./chaos).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// The scenarios each form runs by default: the short form (CI) leaves out the long ones.
const (
	quickScenarios = "daemonset,sizer,pipeline,admission,webhooks-down,restarts"
	fullScenarios  = quickScenarios + ",flapping,soak"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// outcome gathers what the scenarios found.
type outcome struct {
	leaderDeath []Result
	admission   []AdmissionResult
	down        *WebhooksDownResult
	restarts    *RestartResult
	flapping    *FlappingResult
	soak        *SoakResult
}

// failures says what fails the run: a broken invariant, an admission call refused while no replica crashed or
// froze, a failed check with the webhooks down.
func (o outcome) failures() []string {
	var failed []string
	for _, r := range o.leaderDeath {
		if r.Violations > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d samples broke the invariant", r.Scenario, r.Violations))
		}
		failed = append(failed, r.lateFaults()...)
	}
	for _, r := range o.admission {
		if n := r.GatedCalls; n > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d admission calls failed while no replica crashed or froze (%s)",
				r.Scenario, n, strings.Join(r.Gated, "; ")))
		}
	}
	if o.restarts != nil {
		failed = append(failed, o.restarts.failures()...)
	}
	if o.flapping != nil {
		failed = append(failed, o.flapping.failures()...)
	}
	if o.soak != nil {
		failed = append(failed, o.soak.failures()...)
	}
	if o.down != nil && o.down.failed() > 0 {
		failed = append(failed, fmt.Sprintf("webhooks down: %d checks failed", o.down.failed()))
	}
	return failed
}

func run() error {
	runCommit() // read before any results file is rewritten
	// Its own flag set: a package it imports registers --kubeconfig on the global one.
	flag := flag.NewFlagSet("chaos", flag.ExitOnError)
	kubeconfig := flag.String("kubeconfig", ".cluster/kubeconfig", "the local cluster's kubeconfig")
	clusterTool := flag.String("cluster-tool", "bin/keelson-cluster", "the local cluster tool: resizes the simulated nodes, signals pods")
	clusterDir := flag.String("cluster-dir", ".cluster", "the cluster's directory")
	release := flag.String("release", "keelson", "the chart's release name")
	releaseNS := flag.String("release-namespace", "keelson-system", "the chart's namespace")
	quick := flag.Bool("quick", false, "the short form (CI): fewer faults, fewer nodes; prints the results, writes nothing")
	scenarios := flag.String("scenarios", "",
		"the scenarios to run: each controller's leader death (daemonset, sizer, pipeline), admission while replicas die "+
			"(admission), no webhook reachable while the controllers run (webhooks-down), etcd and the apiserver "+
			"restarted while all three work (restarts), simulated nodes flapping (flapping), a long run of mixed churn "+
			"(soak); the short form runs the first six, the full form all")
	auditLog := flag.String("audit-log", ".cluster/logs/audit.log", "the apiserver's audit log: the writes repeated after a restart")
	flapFor := flag.Duration("flap-for", 0, "how long nodes flap instead of the plan's")
	soakFor := flag.Duration("soak-for", 0, "how long the soak churns instead of the plan's")
	faults := flag.Int("faults", 0, "faults per scenario (leader deaths, replica deaths, restarts) instead of the plan's")
	nodes := flag.Int("nodes", 0, "simulated nodes instead of the plan's")
	out := flag.String("out", "", "rewrite the figures of the scenarios run in reliability.md, and their JSON, under this directory (full runs)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the fault timing")
	if err := flag.Parse(os.Args[1:]); err != nil {
		return err
	}

	if *out != "" && !*quick {
		if err := rewritesAllLeaderDeaths(*scenarios); err != nil {
			return err
		}
	}
	p := planFor(*quick, *faults, *nodes, *flapFor, *soakFor)
	if *scenarios == "" {
		*scenarios = quickScenarios
		if !*quick {
			*scenarios = fullScenarios
		}
	}
	c, cfg, err := localcluster.Client(*kubeconfig, 100, 200)
	if err != nil {
		return err
	}
	// Interrupted (Ctrl-C, a CI timeout), the scenarios' deferred clean-ups still run: webhooks pointed back at
	// their Services, frozen pods woken, the node pool restored.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() { <-ctx.Done(); cancel() }() // a second Ctrl-C then stops the process at once
	e := &env{c: c, cfg: cfg, clusterTool: *clusterTool, clusterDir: *clusterDir, release: *release,
		releaseNS: *releaseNS, auditLog: *auditLog, plan: p, rng: rand.New(rand.NewPCG(*seed, 0))}
	fmt.Printf("chaos: seed %d, %d faults per scenario, %d simulated nodes\n", *seed, p.Faults, p.Nodes)

	var pool corev1.NodeList
	if err := c.List(ctx, &pool, client.MatchingLabels(localcluster.FakeNodeLabels)); err != nil {
		return err
	}
	if err := localcluster.ResizePool(ctx, c, *clusterTool, *clusterDir, p.Nodes); err != nil {
		return err
	}
	// The pool goes back to what it was: what runs next on the cluster (CI's crash test) expects it.
	defer func() {
		if err := localcluster.ResizePool(context.WithoutCancel(ctx), c, *clusterTool, *clusterDir, len(pool.Items)); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: restoring %d simulated nodes: %v\n", len(pool.Items), err)
		}
	}()
	e.nodeNames = nodeNames(p.Nodes)
	o, err := runScenarios(ctx, e, strings.Split(*scenarios, ","))
	if err != nil {
		return err
	}
	if *out != "" && !*quick {
		if err := writeResults(*out, o, *seed); err != nil {
			return err
		}
	}
	if failed := o.failures(); len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// rewritesAllLeaderDeaths refuses a run that would rewrite the leader-death figures, one table of the three
// controllers, with some of the three only.
func rewritesAllLeaderDeaths(scenarios string) error {
	n := 0
	for _, name := range strings.Split(scenarios, ",") {
		if name == "daemonset" || name == "sizer" || name == "pipeline" {
			n++
		}
	}
	if n != 0 && n != 3 {
		return fmt.Errorf("--out with --scenarios %s: the leader-death figures need daemonset, sizer and pipeline together", scenarios)
	}
	return nil
}

// planFor is the full plan, or the short one, with what the flags set instead (0 for the plan's).
func planFor(quick bool, faults, nodes int, flapFor, soakFor time.Duration) plan {
	p := fullPlan
	if quick {
		p = quickPlan
	}
	if faults > 0 {
		p.Faults, p.AdmissionFaults, p.Restarts = faults, faults, faults
	}
	if nodes > 0 {
		p.Nodes = nodes
	}
	if flapFor > 0 {
		p.FlapFor = flapFor
	}
	if soakFor > 0 {
		p.SoakFor = soakFor
	}
	return p
}

// runScenarios runs the named scenarios in turn, stopping at the first that cannot run.
func runScenarios(ctx context.Context, e *env, names []string) (outcome, error) {
	var o outcome
	for _, name := range names {
		var err error
		switch name {
		case "daemonset", "sizer", "pipeline":
			var r Result
			r, err = runLeaderDeath(ctx, e, name)
			o.leaderDeath = append(o.leaderDeath, r)
		case "admission":
			o.admission, err = runAdmission(ctx, e)
		case "webhooks-down":
			o.down, err = runWebhooksDown(ctx, e)
		case "restarts":
			o.restarts, err = runRestarts(ctx, e)
		case "flapping":
			o.flapping, err = runFlapping(ctx, e)
		case "soak":
			o.soak, err = runSoak(ctx, e)
		default:
			err = fmt.Errorf("--scenarios: unknown scenario %q", name)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// inNamespaces runs f with fresh namespaces named "chaos-<name>" and, for each suffix, "chaos-<name>-<suffix>",
// and deletes them afterwards, waiting until they are gone (when f fails, without waiting).
func inNamespaces[T any](ctx context.Context, c client.Client, name string, suffixes []string, f func(ns string) (T, error)) (T, error) {
	ns := "chaos-" + name
	all := []string{ns}
	for _, s := range suffixes {
		all = append(all, ns+"-"+s)
	}
	var zero T
	for _, n := range all {
		if err := freshNamespace(ctx, c, n); err != nil {
			return zero, err
		}
	}
	res, err := f(ns)
	if err != nil {
		// Deleted all the same (not waited for): what a failed scenario leaves must not weigh on the next one.
		for _, n := range all {
			_ = c.Delete(context.WithoutCancel(ctx), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return res, err
	}
	for _, n := range all {
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); client.IgnoreNotFound(err) != nil {
			return res, err
		}
	}
	// The next scenario starts once they are gone: their teardown is no part of its figures.
	return res, pollUntil(ctx, 10*time.Minute, func() (bool, error) {
		for _, n := range all {
			err := c.Get(ctx, client.ObjectKey{Name: n}, &corev1.Namespace{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// runLeaderDeath runs one controller's leader-death scenario (name: daemonset, sizer or pipeline).
func runLeaderDeath(ctx context.Context, e *env, name string) (Result, error) {
	return inNamespaces(ctx, e.c, name, nil, func(ns string) (Result, error) {
		var w workload
		r := Result{Scenario: name + ": leader death"}
		cs, err := kubernetes.NewForConfig(e.cfg)
		if err != nil {
			return r, err
		}
		switch name {
		case "daemonset":
			w = &daemonSetWork{c: e.c, ns: ns, nodes: e.plan.Nodes, cs: cs, budget: true}
			r.Controller, r.Size = "daemonset-controller", fmt.Sprintf("1 DaemonSet on %d nodes, maxSurge 0, maxUnavailable 10%%", e.plan.Nodes)
			r.Invariant = "at every pod event: no node holds two pods that run or are about to (terminating ones included), " +
				"and no more nodes than maxUnavailable lack an available pod"
		case "sizer":
			w = &sizerWork{c: e.c, ns: ns, count: e.plan.Sizers, cs: cs}
			r.Controller, r.Size = "workload-sizer", fmt.Sprintf("%d WorkloadSizers, sizes 3, 4 and 5 in turn", e.plan.Sizers)
			r.Invariant = "at every Deployment event: its replicas are the round's size, or the round before's until the round's was " +
				"written, never going back once written; its pod template never changes"
		case "pipeline":
			w = &pipelineWork{c: e.c, ns: ns, count: e.plan.Pipelines, nodes: e.nodeNames, cs: cs}
			r.Controller, r.Size = "pipeline-controller", fmt.Sprintf("%d two-step Pipelines, every step rolled each round", e.plan.Pipelines)
			r.Invariant = "at every step Deployment event: its template never goes back to an earlier round's; in every " +
				"list: no step Deployment, Service or volume is ever deleted or created twice; each round reaches every step"
		}
		res, err := leaderDeath(ctx, e.injector(r.Controller), w, r, e.plan.Faults, e.rng)
		if err != nil {
			return res, fmt.Errorf("%s: %w", r.Scenario, err)
		}
		fmt.Print(resultText(res))
		return res, nil
	})
}

// runAdmission runs the admission scenario for each controller in turn.
func runAdmission(ctx context.Context, e *env) ([]AdmissionResult, error) {
	return inNamespaces(ctx, e.c, "admission", nil, func(ns string) ([]AdmissionResult, error) {
		var out []AdmissionResult
		for _, controller := range controllers {
			object, err := admissionObject(controller, ns)
			if err != nil {
				return nil, err
			}
			r := AdmissionResult{Scenario: controller + ": admission while a replica dies", Controller: controller}
			res, err := admissionReplicaDeath(ctx, e.injector(controller), object, r, e.plan.AdmissionFaults, e.rng)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Scenario, err)
			}
			fmt.Print(admissionText(res))
			out = append(out, res)
		}
		return out, nil
	})
}

// runWebhooksDown runs the webhooks-down scenario.
func runWebhooksDown(ctx context.Context, e *env) (*WebhooksDownResult, error) {
	return inNamespaces(ctx, e.c, "webhooks-down", nil, func(ns string) (*WebhooksDownResult, error) {
		res, err := webhooksDown(ctx, e.c, ns, e.releaseNS, e.release, e.clusterTool, e.clusterDir)
		if err != nil {
			return nil, fmt.Errorf("webhooks down: %w", err)
		}
		fmt.Print(webhooksDownText(res))
		return &res, nil
	})
}

// runRestarts runs the control-plane restart scenario, each controller's workload in a namespace of its own.
func runRestarts(ctx context.Context, e *env) (*RestartResult, error) {
	return inNamespaces(ctx, e.c, "restarts", []string{"daemonset", "sizer", "pipeline"}, func(ns string) (*RestartResult, error) {
		in := e.injectors()
		cs, err := kubernetes.NewForConfig(e.cfg)
		if err != nil {
			return nil, err
		}
		work := map[string]workload{
			"daemonset-controller": &daemonSetWork{c: e.c, ns: ns + "-daemonset", nodes: e.plan.Nodes, cs: cs},
			"workload-sizer":       &sizerWork{c: e.c, ns: ns + "-sizer", count: e.plan.Sizers},
			"pipeline-controller":  &pipelineWork{c: e.c, ns: ns + "-pipeline", count: e.plan.Pipelines, nodes: e.nodeNames},
		}
		reach, err := serviceReadiness(ctx, e.c, e.cfg)
		if err != nil {
			return nil, err
		}
		res, err := controlPlaneRestarts(ctx, e.c, cs, in, work, reach, e.auditLog, e.plan.Restarts, e.rng)
		if err != nil {
			return nil, fmt.Errorf("control-plane restarts: %w", err)
		}
		fmt.Print(restartsText(res))
		return &res, nil
	})
}

// runFlapping runs the node-flapping scenario, with its own reader of the controllers' metrics.
func runFlapping(ctx context.Context, e *env) (*FlappingResult, error) {
	return inNamespaces(ctx, e.c, "flapping", nil, func(ns string) (*FlappingResult, error) {
		scr, err := metrics.NewScraper(ctx, e.c, ns, e.releaseNS, e.release)
		if err != nil {
			return nil, err
		}
		defer func() { _ = metrics.DeleteReader(context.WithoutCancel(ctx), e.c) }()
		res, err := flapping(ctx, e, ns, scr)
		if err != nil {
			return nil, fmt.Errorf("node flapping: %w", err)
		}
		fmt.Print(flappingText(res))
		return &res, nil
	})
}

// runSoak runs the soak on a pool of SoakNodes, then puts the pool back to the plan's size.
func runSoak(ctx context.Context, e *env) (*SoakResult, error) {
	soakEnv := *e
	soakEnv.plan.Nodes = e.plan.SoakNodes
	soakEnv.nodeNames = nodeNames(e.plan.SoakNodes)
	if err := localcluster.ResizePool(ctx, e.c, e.clusterTool, e.clusterDir, e.plan.SoakNodes); err != nil {
		return nil, err
	}
	defer func() {
		if err := localcluster.ResizePool(context.WithoutCancel(ctx), e.c, e.clusterTool, e.clusterDir, e.plan.Nodes); err != nil {
			fmt.Printf("chaos: restoring %d simulated nodes after the soak: %v\n", e.plan.Nodes, err)
		}
	}()
	return inNamespaces(ctx, e.c, "soak", nil, func(ns string) (*SoakResult, error) {
		scr, err := metrics.NewScraper(ctx, e.c, ns, e.releaseNS, e.release)
		if err != nil {
			return nil, err
		}
		defer func() { _ = metrics.DeleteReader(context.WithoutCancel(ctx), e.c) }()
		res, err := soak(ctx, &soakEnv, ns, scr)
		if err != nil {
			return nil, fmt.Errorf("soak: %w", err)
		}
		fmt.Print(soakText(res))
		return &res, nil
	})
}

// nodeNames are the names of a pool of n simulated nodes.
func nodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "kwok-node-" + strconv.Itoa(i)
	}
	return names
}

// freshNamespace makes an empty namespace: an earlier run's is deleted first.
func freshNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		return err
	}
	return pollUntil(ctx, 5*time.Minute, func() (bool, error) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if apierrors.IsAlreadyExists(err) {
			return false, nil // still terminating
		}
		return err == nil, err
	})
}

// writeResults writes the results as JSON and rewrites their sections of reliability.md under dir: only those of
// the scenarios that ran, so a run of one scenario leaves the others' figures as they were.
func writeResults(dir string, o outcome, seed uint64) error {
	if err := os.MkdirAll(filepath.Join(dir, "reliability"), 0o755); err != nil {
		return err
	}
	doc := filepath.Join(dir, "reliability.md")
	old, err := os.ReadFile(doc)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	type part struct {
		ran     bool
		file    string
		results any
		markers section
		text    func() string
	}
	for _, p := range []part{
		{len(o.leaderDeath) > 0, "faults.json", o.leaderDeath, faultsMarkers, func() string { return faultsSection(o.leaderDeath, seed) }},
		{len(o.admission) > 0, "admission.json", o.admission, admissionMarkers, func() string { return admissionSection(o.admission, seed) }},
		{o.restarts != nil, "restarts.json", o.restarts, restartsMarkers, func() string { return restartsSection(*o.restarts, seed) }},
		{o.flapping != nil, "flapping.json", o.flapping, flappingMarkers, func() string { return flappingSection(*o.flapping, seed) }},
		{o.soak != nil, "soak.json", o.soak, soakMarkers, func() string { return soakSection(*o.soak, seed) }},
		{o.down != nil, "webhooks-down.json", o.down, webhooksDownMarkers, func() string { return webhooksDownSection(*o.down) }},
	} {
		if !p.ran {
			continue
		}
		if err := writeJSON(filepath.Join(dir, "reliability", p.file), seed, p.results); err != nil {
			return err
		}
		text = replaceSection(text, p.markers, p.text())
	}
	made, err := readProvenance(filepath.Join(dir, "reliability"))
	if err != nil {
		return err
	}
	text = replaceSection(text, provenanceMarkers, provenanceSection(made))
	if o.complete() {
		text = replaceSection(text, staleMarkers, "") // every figure is new: none predates a change
	}
	return os.WriteFile(doc, []byte(text), 0o644)
}

// complete says whether every scenario ran, so that every figure of the page is from this run.
func (o outcome) complete() bool {
	return len(o.leaderDeath) > 0 && len(o.admission) > 0 && o.restarts != nil && o.flapping != nil && o.soak != nil &&
		o.down != nil
}

// runCommit is the commit the run was made at, read once before any results file is written (each one written would
// otherwise mark the next as made from a changed tree).
var runCommit = sync.OnceValue(headCommit)

// writeJSON writes one scenario family's results, with the seed, time and commit of the run.
func writeJSON(file string, seed uint64, results any) error {
	b, err := json.MarshalIndent(resultFile{Seed: seed, When: time.Now().UTC(), Commit: runCommit(), Results: results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// headCommit is the checkout's commit, with -dirty when it has changes not committed outside docs/ (the figures a
// run rewrites) ("" outside a checkout).
func headCommit() string {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(b))
	if out, err := exec.Command("git", "status", "--porcelain", "--", ".", ":!docs").Output(); err == nil && len(out) > 0 {
		commit += "-dirty"
	}
	return commit
}

// readProvenance reads when and at which commit each results file in dir was made, by file name.
func readProvenance(dir string) (map[string]resultFile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]resultFile{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r resultFile
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		r.Results = nil
		out[filepath.Base(f)] = r
	}
	return out, nil
}
