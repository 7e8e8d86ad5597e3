// Command chaos is Keelson's reliability suite for faults: it runs the controllers on the local cluster (the chart,
// a real node and simulated nodes), gives them work, injects faults into them, samples an invariant twice a second
// throughout, and measures how long they take to recover. Faults are injected through the local cluster tool,
// which signals exactly the pods it is told about (by UID, through their cgroups).
//
//	go run ./tools/chaos [--quick] [--scenarios daemonset,sizer,pipeline] [--faults N] [--nodes N] [--out docs]
//
// make chaos runs the full form and rewrites the faults section of docs/reliability.md; make chaos-quick runs the
// short form CI runs, prints the results and fails on any violation.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// plan is the size of a run.
type plan struct {
	Nodes, Faults, Sizers, Pipelines int
	// AdmissionFaults is how many replica deaths each controller's admission scenario injects.
	AdmissionFaults int
	// Restarts is how many control-plane restarts (etcd and the apiserver in turn) the restart scenario injects.
	Restarts int
}

var (
	fullPlan  = plan{Nodes: 200, Faults: 20, Sizers: 50, Pipelines: 10, AdmissionFaults: 12, Restarts: 6}
	quickPlan = plan{Nodes: 100, Faults: 3, Sizers: 20, Pipelines: 5, AdmissionFaults: 2, Restarts: 2}
)

// controllers are the chart's three controllers, the names of their Deployments and leases after the release's.
var controllers = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run() error {
	// Its own flag set: a package it imports registers --kubeconfig on the global one.
	flag := flag.NewFlagSet("chaos", flag.ExitOnError)
	kubeconfig := flag.String("kubeconfig", ".cluster/kubeconfig", "the local cluster's kubeconfig")
	clusterTool := flag.String("cluster-tool", "bin/keelson-cluster", "the local cluster tool: resizes the simulated nodes, signals pods")
	clusterDir := flag.String("cluster-dir", ".cluster", "the cluster's directory")
	clusterBinDir := flag.String("cluster-bin-dir", "", "the cluster's Kubernetes binaries and etcd (the cluster tool's --bin-dir): restarts start them")
	release := flag.String("release", "keelson", "the chart's release name")
	releaseNS := flag.String("release-namespace", "keelson-system", "the chart's namespace")
	quick := flag.Bool("quick", false, "the short form (CI): fewer faults, fewer nodes; prints the results, writes nothing")
	scenarios := flag.String("scenarios", "daemonset,sizer,pipeline,admission,webhooks-down,restarts",
		"the scenarios to run: each controller's leader death (daemonset, sizer, pipeline), admission while replicas die "+
			"(admission), no webhook reachable while the controllers run (webhooks-down), etcd and the apiserver "+
			"restarted while all three work (restarts)")
	auditLog := flag.String("audit-log", ".cluster/logs/audit.log", "the apiserver's audit log: the writes repeated after a restart")
	faults := flag.Int("faults", 0, "faults per scenario (leader deaths, replica deaths) instead of the plan's")
	nodes := flag.Int("nodes", 0, "simulated nodes instead of the plan's")
	out := flag.String("out", "", "write docs/reliability.md's faults section and its JSON under this directory (full runs)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the fault timing")
	if err := flag.Parse(os.Args[1:]); err != nil {
		return err
	}

	p := fullPlan
	if *quick {
		p = quickPlan
	}
	if *faults > 0 {
		p.Faults, p.AdmissionFaults, p.Restarts = *faults, *faults, *faults
	}
	if *nodes > 0 {
		p.Nodes = *nodes
	}
	c, _, err := localcluster.Client(*kubeconfig, 100, 200)
	if err != nil {
		return err
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(*seed, 0))
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
		if err := localcluster.ResizePool(ctx, c, *clusterTool, *clusterDir, len(pool.Items)); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: restoring %d simulated nodes: %v\n", len(pool.Items), err)
		}
	}()
	nodeNames := make([]string, p.Nodes)
	for i := range nodeNames {
		nodeNames[i] = "kwok-node-" + strconv.Itoa(i)
	}
	var results []Result
	var admission []AdmissionResult
	var down *WebhooksDownResult
	var restarts *RestartResult
	for _, name := range strings.Split(*scenarios, ",") {
		ns := "chaos-" + name
		if err := freshNamespace(ctx, c, ns); err != nil {
			return err
		}
		if name == "restarts" {
			in, work := map[string]*injector{}, map[string]workload{}
			for _, controller := range controllers {
				in[controller] = &injector{c: c, clusterTool: *clusterTool, clusterDir: *clusterDir, namespace: *releaseNS,
					deployment: *release + "-" + controller}
			}
			// Each workload in a namespace of its own, as in the leader-death scenarios.
			for _, sub := range []string{"daemonset", "sizer", "pipeline"} {
				if err := freshNamespace(ctx, c, ns+"-"+sub); err != nil {
					return err
				}
			}
			work["daemonset-controller"] = &daemonSetWork{c: c, ns: ns + "-daemonset", nodes: p.Nodes}
			work["workload-sizer"] = &sizerWork{c: c, ns: ns + "-sizer", count: p.Sizers}
			work["pipeline-controller"] = &pipelineWork{c: c, ns: ns + "-pipeline", count: p.Pipelines, nodes: nodeNames}
			res, err := controlPlaneRestarts(ctx, c, in, work, *clusterBinDir, *auditLog, p.Restarts, rng)
			if err != nil {
				return fmt.Errorf("control-plane restarts: %w", err)
			}
			fmt.Print(restartsText(res))
			restarts = &res
			for _, sub := range []string{"", "-daemonset", "-sizer", "-pipeline"} {
				if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + sub}}); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
			continue
		}
		if name == "webhooks-down" {
			res, err := webhooksDown(ctx, c, ns, *releaseNS, *release, *clusterTool, *clusterDir)
			if err != nil {
				return fmt.Errorf("webhooks down: %w", err)
			}
			fmt.Print(webhooksDownText(res))
			down = &res
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		if name == "admission" {
			for _, controller := range controllers {
				object, err := admissionObject(controller, ns)
				if err != nil {
					return err
				}
				in := &injector{c: c, clusterTool: *clusterTool, clusterDir: *clusterDir, namespace: *releaseNS,
					deployment: *release + "-" + controller}
				r := AdmissionResult{Scenario: controller + ": admission while a replica dies", Controller: controller}
				res, err := admissionReplicaDeath(ctx, in, object, r, p.AdmissionFaults, rng)
				if err != nil {
					return fmt.Errorf("%s: %w", r.Scenario, err)
				}
				fmt.Print(admissionText(res))
				admission = append(admission, res)
			}
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		var w workload
		r := Result{Scenario: "leader death", Controller: name}
		switch name {
		case "daemonset":
			w = &daemonSetWork{c: c, ns: ns, nodes: p.Nodes}
			r.Controller, r.Size = "daemonset-controller", fmt.Sprintf("1 DaemonSet on %d nodes, maxSurge 0, maxUnavailable 10%%", p.Nodes)
			r.Invariant = "no node ever runs two live pods of the DaemonSet"
		case "sizer":
			w = &sizerWork{c: c, ns: ns, count: p.Sizers}
			r.Controller, r.Size = "workload-sizer", fmt.Sprintf("%d WorkloadSizers, sizes 3, 4 and 5 in turn", p.Sizers)
			r.Invariant = "every Deployment's replicas are one of the last two sizes asked, and its pod template never changes"
		case "pipeline":
			w = &pipelineWork{c: c, ns: ns, count: p.Pipelines, nodes: nodeNames}
			r.Controller, r.Size = "pipeline-controller", fmt.Sprintf("%d two-step Pipelines, every step rolled each round", p.Pipelines)
			r.Invariant = "no step Deployment, Service or volume is ever deleted or created twice"
		default:
			return fmt.Errorf("--scenarios: unknown scenario %q", name)
		}
		r.Scenario = name + ": leader death"
		in := &injector{c: c, clusterTool: *clusterTool, clusterDir: *clusterDir, namespace: *releaseNS,
			deployment: *release + "-" + r.Controller, lease: 15 * time.Second}
		res, err := leaderDeath(ctx, in, w, r, p.Faults, rng)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Scenario, err)
		}
		fmt.Print(resultText(res))
		results = append(results, res)
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if *out != "" && !*quick {
		if err := writeResults(*out, results, admission, down, restarts, *seed); err != nil {
			return err
		}
	}
	var failed []string
	for _, r := range results {
		if r.Violations > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d samples broke the invariant", r.Scenario, r.Violations))
		}
	}
	for _, r := range admission {
		if n := r.gatedFailures(); n > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d admission calls failed while no replica crashed or froze", r.Scenario, n))
		}
	}
	if restarts != nil {
		// A controller's own restarts are measured, not gated: a leader that could not renew its lease for the renew
		// deadline (an apiserver down longer) exits by design, and its standby leads.
		if restarts.Violations > 0 {
			failed = append(failed, fmt.Sprintf("control-plane restarts: %d samples broke an invariant", restarts.Violations))
		}
	}
	if down != nil && down.failed() > 0 {
		failed = append(failed, fmt.Sprintf("webhooks down: %d checks failed", down.failed()))
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
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

// pollUntil polls cond every 500ms until it holds, fails, or timeout (10 minutes when 0) passes.
func pollUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	return wait.Poll(ctx, 500*time.Millisecond, timeout, cond)
}

// writeResults writes the results as JSON and rewrites their sections of reliability.md under dir: the
// leader-death figures when leader-death scenarios ran, the admission figures when the admission scenario ran, the
// webhooks-down checks when that scenario ran.
func writeResults(dir string, results []Result, admission []AdmissionResult, down *WebhooksDownResult, restarts *RestartResult, seed uint64) error {
	if err := os.MkdirAll(filepath.Join(dir, "reliability"), 0o755); err != nil {
		return err
	}
	doc := filepath.Join(dir, "reliability.md")
	old, err := os.ReadFile(doc)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	if len(results) > 0 {
		if err := writeJSON(filepath.Join(dir, "reliability", "faults.json"), seed, results); err != nil {
			return err
		}
		text = replaceSection(text, faultsMarkers, faultsSection(results, seed))
	}
	if len(admission) > 0 {
		if err := writeJSON(filepath.Join(dir, "reliability", "admission.json"), seed, admission); err != nil {
			return err
		}
		text = replaceSection(text, admissionMarkers, admissionSection(admission, seed))
	}
	if restarts != nil {
		if err := writeJSON(filepath.Join(dir, "reliability", "restarts.json"), seed, restarts); err != nil {
			return err
		}
		text = replaceSection(text, restartsMarkers, restartsSection(*restarts, seed))
	}
	if down != nil {
		if err := writeJSON(filepath.Join(dir, "reliability", "webhooks-down.json"), seed, down); err != nil {
			return err
		}
		text = replaceSection(text, webhooksDownMarkers, webhooksDownSection(*down))
	}
	return os.WriteFile(doc, []byte(text), 0o644)
}

// writeJSON writes one scenario family's results, with the seed and time of the run.
func writeJSON(file string, seed uint64, results any) error {
	b, err := json.MarshalIndent(struct {
		Seed    uint64    `json:"seed"`
		When    time.Time `json:"when"`
		Results any       `json:"results"`
	}{seed, time.Now().UTC(), results}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}
