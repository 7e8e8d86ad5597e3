package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	dscontroller "github.com/keelson-dev/keelson/controllers/daemonset"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// FlappingResult is the node-flapping scenario's run: simulated nodes toggling Ready/NotReady and taints while
// two DaemonSets and a set of Pipelines run on them.
type FlappingResult struct {
	// Nodes flapped, out of PoolNodes the DaemonSets run on; Duration of the flapping (as it ran); Flaps by kind.
	Nodes     int            `json:"nodes"`
	PoolNodes int            `json:"poolNodes"`
	Duration  time.Duration  `json:"duration"`
	Flaps     map[string]int `json:"flaps"`
	// PodCreates and PodDeletes are the steady DaemonSet's (never rolled): the taints require at most one delete
	// per NoExecute taint added and one create per pod deleted, on each node; ExcessChurn is what went beyond.
	PodCreates    int      `json:"podCreates"`
	PodDeletes    int      `json:"podDeletes"`
	NoExecuteAdds int      `json:"noExecuteAdds"`
	ExcessChurn   int      `json:"excessChurn"`
	ChurnExamples []string `json:"churnExamples,omitempty"`
	// Events is what the controllers were told while flapping (node and pod changes); ReconcilesPerSecond what
	// each controller did meanwhile; QuietReconcilesPerSecond what it did once all nodes were back and converged.
	NodeEvents int `json:"nodeEvents"`
	// NodeChanges are the node events that changed what a controller reads of a node (labels, cordon, taints,
	// allocatable resources, readiness): the controllers' predicates pass no other.
	NodeChanges              int                `json:"nodeChanges"`
	PodEvents                int                `json:"podEvents"`
	ReconcilesPerSecond      map[string]float64 `json:"reconcilesPerSecond"`
	QuietReconcilesPerSecond map[string]float64 `json:"quietReconcilesPerSecond"`
	// BaselineRollout is the rolling DaemonSet's rollout before any flap, Rollouts those during the flapping:
	// each until every node that never flapped runs an updated, ready pod. RolloutLimit is what counts as stalled.
	BaselineRollout time.Duration   `json:"baselineRollout"`
	Rollouts        []time.Duration `json:"rollouts"`
	RolloutLimit    time.Duration   `json:"rolloutLimit"`
	StalledRollouts int             `json:"stalledRollouts"`
	// Samples and Violations are the Pipelines' invariant (no step Deployment, Service or volume deleted or
	// duplicated), steps pinned to flapping nodes.
	Samples    int      `json:"samples"`
	Violations int      `json:"violations"`
	Examples   []string `json:"examples,omitempty"`
	// Recovery runs from the end of the flapping, once every node was restored, until both DaemonSets and every
	// Pipeline converged.
	Recovery time.Duration `json:"recovery"`
}

// Flap kinds: the node's Ready condition, a NoSchedule taint and a NoExecute taint, each toggled.
const (
	flapNotReady    = "NotReady"
	flapReady       = "Ready again"
	flapNoSchedule  = "NoSchedule taint added"
	flapScheduling  = "NoSchedule taint removed"
	flapNoExecute   = "NoExecute taint added"
	flapExecuteBack = "NoExecute taint removed"
)

// flapKinds is the order the report lists the kinds in.
var flapKinds = []string{flapNotReady, flapReady, flapNoSchedule, flapScheduling, flapNoExecute, flapExecuteBack}

// The taints the scenario toggles; neither DaemonSet nor any step tolerates them.
var (
	flapNoScheduleTaint = corev1.Taint{Key: "chaos.keelson.dev/flap", Value: "noschedule", Effect: corev1.TaintEffectNoSchedule}
	flapNoExecuteTaint  = corev1.Taint{Key: "chaos.keelson.dev/flap-evict", Value: "noexecute", Effect: corev1.TaintEffectNoExecute}
)

// kwokAnnotation marks the nodes kwok plays node stages on: with it, kwok marks a node that is not Ready Ready
// again at once. Taking it away, then writing Ready=False, makes a simulated node report NotReady the way a kubelet
// whose runtime or network failed reports it: kwok goes on renewing the node's lease and running its pods, so the
// node is NotReady, not unreachable (its lease never lapses).
const kwokAnnotation = "kwok.x-k8s.io/node"

// flapState is what the scenario did to one node.
type flapState struct{ notReady, noSchedule, noExecute bool }

// flapper toggles the flapping nodes and records what it did.
type flapper struct {
	c     client.Client
	nodes []string
	state map[string]*flapState
	mu    sync.Mutex
	flaps map[string]int
	// noExecuteAdds counts, per node, the NoExecute taints added: each allows one pod deletion.
	noExecuteAdds map[string]int
}

func newFlapper(c client.Client, nodes []string) *flapper {
	f := &flapper{c: c, nodes: nodes, state: map[string]*flapState{}, flaps: map[string]int{}, noExecuteAdds: map[string]int{}}
	for _, n := range nodes {
		f.state[n] = &flapState{}
	}
	return f
}

// flapOnce toggles one thing on one random node: its readiness half the time, else one of the two taints.
func (f *flapper) flapOnce(ctx context.Context, rng *rand.Rand) error {
	node := f.nodes[rng.IntN(len(f.nodes))]
	s := f.state[node]
	var err error
	var kind string
	switch k := rng.IntN(4); {
	case k < 2:
		kind = map[bool]string{false: flapNotReady, true: flapReady}[s.notReady]
		err = f.setReady(ctx, node, s.notReady)
		f.mu.Lock()
		s.notReady = !s.notReady
		f.mu.Unlock()
	case k == 2:
		kind = map[bool]string{false: flapNoSchedule, true: flapScheduling}[s.noSchedule]
		err = f.setTaint(ctx, node, flapNoScheduleTaint, !s.noSchedule)
		s.noSchedule = !s.noSchedule
	default:
		kind = map[bool]string{false: flapNoExecute, true: flapExecuteBack}[s.noExecute]
		err = f.setTaint(ctx, node, flapNoExecuteTaint, !s.noExecute)
		s.noExecute = !s.noExecute
	}
	if err != nil {
		return fmt.Errorf("%s on %s: %w", kind, node, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flaps[kind]++
	if kind == flapNoExecute {
		f.noExecuteAdds[node]++
	}
	return nil
}

// restore brings every flapping node back: Ready, neither taint. It goes on past a node it cannot restore, and past
// an interrupt: a node left NotReady or tainted would break whatever runs next on the cluster.
func (f *flapper) restore(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, n := range f.nodes {
		err := f.setReady(ctx, n, true)
		for _, t := range []corev1.Taint{flapNoScheduleTaint, flapNoExecuteTaint} {
			err = errors.Join(err, f.setTaint(ctx, n, t, false))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
			continue
		}
		f.mu.Lock()
		*f.state[n] = flapState{}
		f.mu.Unlock()
	}
	return errors.Join(errs...)
}

// markReady plays the part of the kubelet that kwok does not: the node lifecycle controller marks the pods of a node
// that goes NotReady not ready, and a kubelet marks them ready again once the node is back and their containers
// are; kwok leaves them not ready for good. So every pod of the namespace on a flapping node that is Ready again,
// running with its containers ready, is marked Ready. It returns how many it marked.
func (f *flapper) markReady(ctx context.Context, ns string) (int, error) {
	var pods corev1.PodList
	if err := f.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	marked := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !f.back(p.Spec.NodeName) ||
			podCondition(p, corev1.ContainersReady) != corev1.ConditionTrue || podCondition(p, corev1.PodReady) == corev1.ConditionTrue {
			continue
		}
		for j := range p.Status.Conditions {
			if p.Status.Conditions[j].Type == corev1.PodReady {
				p.Status.Conditions[j].Status, p.Status.Conditions[j].LastTransitionTime = corev1.ConditionTrue, metav1.Now()
			}
		}
		if err := f.c.Status().Update(ctx, p); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return marked, err
		}
		marked++
	}
	return marked, nil
}

// back reports whether node is one of the flapping nodes and Ready now.
func (f *flapper) back(node string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.state[node]
	return ok && !s.notReady
}

// podCondition is the status of a pod's condition, or "" when it has none.
func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// keepMarkingReady runs markReady every second until ctx ends.
func (f *flapper) keepMarkingReady(ctx context.Context, ns string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if _, err := f.markReady(ctx, ns); err != nil && ctx.Err() == nil {
			fmt.Printf("chaos: marking pods ready again: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setReady hands the node back to kwok (which marks it Ready at once), or takes it from kwok and writes
// Ready=False, as a node whose kubelet reports a failure would.
func (f *flapper) setReady(ctx context.Context, name string, ready bool) error {
	value := "fake"
	if !ready {
		value = "flapping"
	}
	var node corev1.Node
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
			return err
		}
		if node.Annotations[kwokAnnotation] == value {
			return nil
		}
		node.Annotations[kwokAnnotation] = value
		return f.c.Update(ctx, &node)
	}); err != nil || ready {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
			return err
		}
		now := metav1.Now()
		for i, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				node.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
					Reason: "KubeletNotReady", Message: "the reliability suite flaps this node", LastHeartbeatTime: now,
					LastTransitionTime: now}
			}
		}
		return f.c.Status().Update(ctx, &node)
	})
}

// setTaint adds or removes one taint, with an optimistic lock: the node lifecycle controller writes taints too.
func (f *flapper) setTaint(ctx context.Context, name string, taint corev1.Taint, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var node corev1.Node
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
			return err
		}
		kept := node.Spec.Taints[:0:0]
		for _, t := range node.Spec.Taints {
			if t.Key != taint.Key {
				kept = append(kept, t)
			}
		}
		if on {
			kept = append(kept, taint)
		}
		if len(kept) == len(node.Spec.Taints) && !on {
			return nil
		}
		node.Spec.Taints = kept
		return f.c.Update(ctx, &node)
	})
}

// excessChurn compares a DaemonSet's pod creates and deletes on each node with what the taints allowed: a delete
// per NoExecute taint added, a create per pod deleted. It returns the excess and examples of it.
func excessChurn(creates, deletes, allowed map[string]int) (int, []string) {
	nodes := map[string]bool{}
	for _, m := range []map[string]int{creates, deletes} {
		for n := range m {
			nodes[n] = true
		}
	}
	names := slices.Sorted(maps.Keys(nodes))
	excess := 0
	var examples []string
	for _, n := range names {
		over := max(0, deletes[n]-allowed[n]) + max(0, creates[n]-deletes[n])
		if over > 0 {
			excess += over
			if len(examples) < maxExamples {
				examples = append(examples, fmt.Sprintf("node %s: %d pods created and %d deleted, %d NoExecute taints added",
					n, creates[n], deletes[n], allowed[n]))
			}
		}
	}
	return excess, examples
}

// flapping is the scenario: two DaemonSets on the whole pool and Pipelines pinned to the flapping nodes; a rollout
// before any flap as the baseline; then flapFor of flaps, one every flapEvery, with two rollouts of the rolling
// DaemonSet in it; then every node restored and everything converged.
func flapping(ctx context.Context, e *env, ns string, scr *metrics.Scraper) (FlappingResult, error) {
	flapNodes := e.nodeNames[:min(e.plan.FlapNodes, len(e.nodeNames))]
	r := FlappingResult{Nodes: len(flapNodes), PoolNodes: e.plan.Nodes, Duration: e.plan.FlapFor}
	f := newFlapper(e.c, flapNodes)
	// A run interrupted hard may have left nodes flapped: every node starts as the flapper believes it is.
	if err := f.restore(ctx); err != nil {
		return r, fmt.Errorf("bringing the nodes to flap back to Ready: %w", err)
	}
	defer func() {
		if err := f.restore(ctx); err != nil {
			fmt.Printf("chaos: restoring the flapped nodes: %v\n", err)
		}
	}()
	w, baseline, err := setUpFlapping(ctx, e, ns, flapNodes)
	if err != nil {
		return r, err
	}
	steady, rolling, pipelines, stable := w.steady, w.rolling, w.pipelines, w.stable
	r.BaselineRollout = baseline
	r.RolloutLimit = 3*r.BaselineRollout + 30*time.Second

	events, err := watchEvents(ctx, e.cfg, ns, "chaos="+steady.dsName())
	if err != nil {
		return r, err
	}
	defer func() { _ = events.stop() }()
	restartsBefore, err := controllerRestarts(ctx, e.c, e.injectors())
	if err != nil {
		return r, err
	}
	before, err := scr.ReconcileTotals(ctx, controllers)
	if err != nil {
		return r, err
	}
	stopKubelet := background(ctx, func(ctx context.Context) { f.keepMarkingReady(ctx, ns) })
	defer stopKubelet()
	s := &sampler{}
	stopSampling := background(ctx, func(ctx context.Context) { s.run(ctx, pipelines) })
	defer stopSampling()

	// Two rollouts while flapping: a moment in, and half-way. They stop with the scenario, whatever ends it.
	rctx, stopRollouts := context.WithCancel(ctx)
	defer stopRollouts()
	began := time.Now()
	rolled := startRollouts(rctx, e.plan.FlapFor, rolling, stable, r.RolloutLimit, began)
	if err := flapUntil(ctx, e, f, began); err != nil {
		return r, err
	}
	if err := r.readRates(ctx, scr, events, before, began); err != nil {
		return r, err
	}
	ro := <-rolled
	if ro.err != nil {
		return r, ro.err
	}
	r.Rollouts, r.StalledRollouts = ro.took, ro.stalled
	if err := noRestartsSince(ctx, e, restartsBefore); err != nil {
		return r, err
	}

	if r.Recovery, err = restoreAndConverge(ctx, f, w); err != nil {
		return r, err
	}
	stopKubelet()
	stopSampling()
	r.Samples, r.Violations, r.Examples = s.samples, s.violations, s.examples
	if s.errors*10 > s.samples+s.errors {
		return r, fmt.Errorf("%d of %d reads of the invariant failed (last: %w)", s.errors, s.samples+s.errors, s.err)
	}
	if err := events.stop(); err != nil {
		return r, fmt.Errorf("watching pods and nodes: %w", err)
	}
	r.tallyChurn(events, f)

	// A quiet stretch: no flap, nothing to converge; a controller still busy now is looping.
	quiet, err := scr.Idle(ctx, controllers, quietFor)
	if err != nil {
		return r, err
	}
	r.QuietReconcilesPerSecond = quiet.ReconcilesPerSecond
	return r, nil
}

// flapWork is what the flapping scenario drives: a DaemonSet left as it is and one rolled out, on every node,
// and Pipelines on the flapping nodes; stable are the nodes that never flap.
type flapWork struct {
	steady, rolling *daemonSetWork
	pipelines       *pipelineWork
	stable          map[string]bool
}

// all are the workloads, to wait for their convergence.
func (w flapWork) all() []workload { return []workload{w.steady, w.rolling, w.pipelines} }

// setUpFlapping sets the workloads up and times a rollout to the nodes that never flap, before any flap.
func setUpFlapping(ctx context.Context, e *env, ns string, flapNodes []string) (flapWork, time.Duration, error) {
	w := flapWork{steady: &daemonSetWork{c: e.c, ns: ns, nodes: e.plan.Nodes, name: "steady"},
		rolling:   &daemonSetWork{c: e.c, ns: ns, nodes: e.plan.Nodes, name: "rolling"},
		pipelines: &pipelineWork{c: e.c, ns: ns, count: min(e.plan.Pipelines, len(flapNodes)/2), nodes: flapNodes},
		stable:    map[string]bool{}}
	for _, wl := range w.all() {
		if err := wl.setUp(ctx); err != nil {
			return w, 0, fmt.Errorf("setting up: %w", err)
		}
	}
	for _, n := range e.nodeNames[len(flapNodes):] {
		w.stable[n] = true
	}
	baseline, done, err := rollOut(ctx, w.rolling, 1, w.stable, 10*time.Minute)
	switch {
	case err != nil:
		return w, 0, fmt.Errorf("the baseline rollout: %w", err)
	case !done:
		return w, 0, errors.New("the baseline rollout, before any flap, did not finish in 10 minutes")
	}
	return w, baseline, nil
}

// rollouts are the rollouts made while the nodes flapped: how long each took, how many stalled, and what stopped
// them.
type rollouts struct {
	took    []time.Duration
	stalled int
	err     error
}

// startRollouts rolls the DaemonSet out twice while the nodes flap (a tenth into flapFor and half-way, from began),
// each given limit to reach the stable nodes; their result comes on the channel once both are done or ctx ends.
func startRollouts(ctx context.Context, flapFor time.Duration, rolling *daemonSetWork, stable map[string]bool,
	limit time.Duration, began time.Time) <-chan rollouts {
	rolled := make(chan rollouts, 1)
	go func() {
		var out rollouts
		defer func() { rolled <- out }()
		for i, at := range []time.Duration{flapFor / 10, flapFor / 2} {
			if out.err = sleepUntil(ctx, began.Add(at)); out.err != nil {
				return
			}
			took, done, err := rollOut(ctx, rolling, i+2, stable, limit)
			if err != nil {
				out.err = fmt.Errorf("rollout %d: %w", i+1, err)
				return
			}
			if !done {
				out.stalled++
			}
			out.took = append(out.took, took)
		}
	}()
	return rolled
}

// flapUntil flaps a node every FlapEvery until FlapFor has passed since began.
func flapUntil(ctx context.Context, e *env, f *flapper, began time.Time) error {
	tick := time.NewTicker(e.plan.FlapEvery)
	defer tick.Stop()
	for time.Since(began) < e.plan.FlapFor {
		if err := f.flapOnce(ctx, e.rng); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// readRates reads the controllers' reconciles a second since before, and the node and pod events since the watch
// began: at the same instant, over the same stretch.
func (r *FlappingResult) readRates(ctx context.Context, scr *metrics.Scraper, events *eventLog, before map[string]float64,
	began time.Time) error {
	r.Duration = time.Since(began).Round(100 * time.Millisecond)
	after, err := scr.ReconcileTotals(ctx, controllers)
	if err != nil {
		return err
	}
	r.NodeEvents, r.NodeChanges = events.nodeEvents()
	r.PodEvents = events.podEvents()
	r.ReconcilesPerSecond = metrics.PerSecond(before, after, r.Duration)
	return nil
}

// restoreAndConverge brings the flapped nodes back and says how long everything then took to converge. Pods the
// node lifecycle controller marks not ready after the restore (it looks every 5 s) are marked ready again by the
// flapper's kubelet loop, which runs until everything converged.
func restoreAndConverge(ctx context.Context, f *flapper, w flapWork) (time.Duration, error) {
	if err := f.restore(ctx); err != nil {
		return 0, fmt.Errorf("restoring the flapped nodes: %w", err)
	}
	restored := time.Now()
	if err := pollUntil(ctx, 10*time.Minute, func() (bool, error) {
		for _, wl := range w.all() {
			if ok, err := wl.converged(ctx); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return 0, fmt.Errorf("no convergence once the nodes were back: %w", err)
	}
	return time.Since(restored), nil
}

// noRestartsSince fails when a controller restarted since before was counted: it started its counters again, and
// its reconcile rate would read low.
func noRestartsSince(ctx context.Context, e *env, before map[string]int32) error {
	after, err := controllerRestarts(ctx, e.c, e.injectors())
	if err != nil {
		return err
	}
	for name, n := range after {
		if n != before[name] {
			return fmt.Errorf("%s restarted while the nodes flapped: its reconcile rate cannot be read", name)
		}
	}
	return nil
}

// tallyChurn counts the pod creates and deletes the watch saw, the NoExecute taints the flapper added, and the
// churn beyond what those taints required.
func (r *FlappingResult) tallyChurn(events *eventLog, f *flapper) {
	creates, deletes := events.churn()
	for _, n := range creates {
		r.PodCreates += n
	}
	for _, n := range deletes {
		r.PodDeletes += n
	}
	for _, n := range f.noExecuteAdds {
		r.NoExecuteAdds += n
	}
	r.Flaps = f.flaps
	r.ExcessChurn, r.ChurnExamples = excessChurn(creates, deletes, f.noExecuteAdds)
}

// quietFor is how long the controllers' reconciles are counted once everything converged after the flapping.
const quietFor = 30 * time.Second

// quietReconcilesPerSecond is the most a controller may reconcile per second while nothing changes.
const quietReconcilesPerSecond = 1.0

// failures says what fails the flapping scenario: churn the taints did not require, a stalled rollout, a broken
// Pipeline invariant, a controller reconciling more than the events it got, or busy while nothing changes.
func (r FlappingResult) failures() []string {
	var out []string
	if r.ExcessChurn > 0 {
		out = append(out, fmt.Sprintf("node flapping: %d pod creates or deletes beyond what the taints required", r.ExcessChurn))
	}
	if r.StalledRollouts > 0 {
		out = append(out, fmt.Sprintf("node flapping: %d rollouts did not reach the nodes that never flapped within %s",
			r.StalledRollouts, seconds(r.RolloutLimit)))
	}
	if r.Violations > 0 {
		out = append(out, fmt.Sprintf("node flapping: %d samples broke the Pipelines' invariant", r.Violations))
	}
	for _, name := range controllers {
		if r.busyWhileFlapping(name) {
			out = append(out, fmt.Sprintf("node flapping: %s reconciled %.1f times a second, more than the %.1f the events "+
				"could ask of it", name, r.ReconcilesPerSecond[name], r.reconcileBound(name)))
		}
	}
	for _, name := range controllers {
		if v := r.QuietReconcilesPerSecond[name]; v > quietReconcilesPerSecond {
			out = append(out, fmt.Sprintf("node flapping: %s reconciled %.1f times a second once nothing changed", name, v))
		}
	}
	return out
}

// reconcileBound is the most a controller's reconciles a second could be asked for by the events while nodes
// flapped: a node change (an event that changes what a controller reads of the node; a heartbeat passes no
// controller's predicate) wakes each of the two DaemonSets at most once (a Pipeline step's node wakes its one
// Pipeline), a pod event wakes its one owner; so 2 a node change and 1 a pod event. The sizer watches no node and
// none of these pods: nothing asks it for more than its quiet rate.
func (r FlappingResult) reconcileBound(name string) float64 {
	if name == "workload-sizer" || r.Duration <= 0 {
		return quietReconcilesPerSecond
	}
	return float64(2*r.NodeChanges+r.PodEvents) / r.Duration.Seconds()
}

// busyWhileFlapping reports whether a controller reconciled more than the events could ask of it.
func (r FlappingResult) busyWhileFlapping(name string) bool {
	return r.ReconcilesPerSecond[name] > r.reconcileBound(name)
}

// rollOut changes the DaemonSet's template (round) and waits until every node in nodes runs exactly one live pod,
// ready and of the new revision. It returns how long that took, or done false once limit passed (a stall); err is
// a failed write or read.
func rollOut(ctx context.Context, w *daemonSetWork, round int, nodes map[string]bool, limit time.Duration) (took time.Duration, done bool, err error) {
	start := time.Now()
	if err := w.change(ctx, round); err != nil {
		return 0, false, err
	}
	for {
		ok, err := rolledOn(ctx, w, nodes)
		switch {
		case err != nil:
			return 0, false, err
		case ok:
			return time.Since(start), true, nil
		case time.Since(start) > limit:
			return limit, false, nil
		}
		if err := sleepUntil(ctx, time.Now().Add(samplePeriod)); err != nil {
			return 0, false, err
		}
	}
}

// rolledOn reports whether every node in nodes runs exactly one live pod of the DaemonSet, ready and of the
// revision of its current template.
func rolledOn(ctx context.Context, w *daemonSetWork, nodes map[string]bool) (bool, error) {
	var ds daemonsetv1alpha1.DaemonSet
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.dsName()}, &ds); err != nil {
		return false, err
	}
	if ds.Status.ObservedGeneration < ds.Generation || ds.Status.UpdateRevision == "" {
		return false, nil
	}
	pods, err := w.pods(ctx)
	if err != nil {
		return false, err
	}
	updated := map[string]int{}
	others := map[string]int{}
	for _, p := range pods {
		node := dscontroller.PodNode(&p)
		switch {
		case !live(&p) || !nodes[node]:
		case p.Labels[dscontroller.RevisionLabel] == ds.Status.UpdateRevision && podReady(&p):
			updated[node]++
		default:
			others[node]++
		}
	}
	for n := range nodes {
		if updated[n] != 1 || others[n] != 0 {
			return false, nil
		}
	}
	return true, nil
}
