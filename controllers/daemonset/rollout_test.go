package daemonset

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

const (
	oldRev = "old"
	newRev = "new"
)

// podState is how a test pod looks.
type podState int

const (
	available podState = iota // running and ready for long enough
	starting                  // running, not ready
	failed
)

func testPod(name, hash string, state podState) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RevisionLabel: hash},
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	switch state {
	case available:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	case starting:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	case failed:
		p.Status.Phase = corev1.PodFailed
	}
	return p
}

// view builds an eligible, up node with pods.
func view(name string, pods ...*corev1.Pod) nodeView {
	return nodeView{name: name, eligibility: eligibility{true, true}, canary: true, pods: pods}
}

// summary is a plan in a comparable form: "create node@hash" and "delete pod (reason)".
func summary(p plan) []string {
	var out []string
	for _, c := range p.creates {
		out = append(out, "create "+c.node+"@"+c.hash)
	}
	for _, d := range p.deletes {
		out = append(out, "delete "+d.pod.Name+" ("+d.reason+")")
	}
	sort.Strings(out)
	return out
}

func rolling(maxUnavailable, maxSurge int) strategy {
	return strategy{maxUnavailable: maxUnavailable, maxSurge: maxSurge}
}

// tainted makes a node admit no new pod while its pods stay (an untolerated NoSchedule taint).
func tainted(v nodeView) nodeView {
	v.eligibility = eligibility{shouldRun: false, shouldContinueRunning: true}
	return v
}

// down makes a node NotReady (or gone from the kubelet's reach).
func down(v nodeView) nodeView { v.down = true; return v }

// started dates a pod's start a minute ago.
func started(p *corev1.Pod) *corev1.Pod {
	p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	return p
}

// notCanary makes a node one the canary selector leaves out.
func notCanary(v nodeView) nodeView { v.canary = false; return v }

// planCase is one plan of planNodes: the nodes and the strategy, and the plan's creates and deletes, its requeue and
// the nodes whose failed pods it deletes.
type planCase struct {
	nodes   []nodeView
	s       strategy
	want    []string
	requeue time.Duration
	failed  []string
}

// runPlanCases plans each case with the update revision newRev over the current oldRev.
func runPlanCases(t *testing.T, cases map[string]planCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := planNodes(tc.nodes, tc.s, newRev, oldRev, now)
			if diff := cmp.Diff(tc.want, summary(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if p.requeueAfter != tc.requeue {
				t.Errorf("requeueAfter = %s, want %s", p.requeueAfter, tc.requeue)
			}
			if diff := cmp.Diff(tc.failed, p.failedNodes); diff != "" {
				t.Errorf("failedNodes (-want +got):\n%s", diff)
			}
		})
	}
}

// Pods go where they should run and leave where they should not; failed pods are replaced after their backoff.
func TestPlanNodes(t *testing.T) {
	runPlanCases(t, map[string]planCase{
		"one pod per eligible node": {
			nodes: []nodeView{view("a"), view("b"), {name: "c"}},
			s:     rolling(1, 0),
			want:  []string{"create a@new", "create b@new"},
		},
		"steady state does nothing": {
			nodes: []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", newRev, starting))},
			s:     rolling(1, 0),
		},
		"pod on a node that no longer qualifies is deleted": {
			nodes: []nodeView{{name: "a", pods: []*corev1.Pod{testPod("pa", newRev, available)}}},
			s:     rolling(1, 0),
			want:  []string{"delete pa (Misscheduled)"},
		},
		"NoSchedule taint: running pod stays, none created": {
			nodes: []nodeView{{name: "a", eligibility: eligibility{shouldContinueRunning: true}, pods: []*corev1.Pod{testPod("pa", newRev, available)}},
				{name: "b", eligibility: eligibility{shouldContinueRunning: true}}},
			s: rolling(1, 0),
		},
		"NoSchedule taint: an old pod is neither deleted nor replaced by a rollout": {
			nodes: []nodeView{tainted(view("a", testPod("pa", oldRev, available))), view("b", testPod("pb", newRev, available))},
			s:     rolling(1, 0),
		},
		"failed pod is deleted; the replacement waits for the next pass": {
			nodes:  []nodeView{view("a", testPod("pa", newRev, failed))},
			s:      rolling(1, 0),
			want:   []string{"delete pa (Failed)"},
			failed: []string{"a"},
		},
		"failed pod in backoff is kept and nothing is created": {
			nodes:   []nodeView{func() nodeView { v := view("a", testPod("pa", newRev, failed)); v.backoff = 8 * time.Second; return v }()},
			s:       rolling(1, 0),
			requeue: 8 * time.Second,
		},
		"succeeded pod is deleted like a failed one; the replacement waits for the next pass": {
			nodes:  []nodeView{view("a", func() *corev1.Pod { p := testPod("pa", newRev, failed); p.Status.Phase = corev1.PodSucceeded; return p }())},
			s:      rolling(1, 0),
			want:   []string{"delete pa (Succeeded)"},
			failed: []string{"a"},
		},
		"OnDelete: a pod ready but not yet for minReadySeconds brings a pass when it becomes available": {
			nodes:   []nodeView{view("a", readyFor(testPod("pa", newRev, available), 3*time.Second))},
			s:       strategy{onDelete: true, maxUnavailable: 1, minReadySeconds: 10},
			requeue: 7 * time.Second,
		},
		"paused: a pod ready but not yet for minReadySeconds brings a pass when it becomes available": {
			nodes:   []nodeView{view("a", readyFor(testPod("pa", newRev, available), 3*time.Second)), view("b", testPod("pb", oldRev, available))},
			s:       strategy{paused: true, maxUnavailable: 1, minReadySeconds: 10},
			requeue: 7 * time.Second,
		},
		"no new pod while the old one terminates": {
			nodes: []nodeView{func() nodeView { v := view("a"); v.terminating = 1; return v }()},
			s:     rolling(1, 0),
		},
		"duplicates: keep the update revision's ready pod": {
			nodes: []nodeView{view("a", testPod("p1", oldRev, available), testPod("p2", newRev, starting), testPod("p3", newRev, available))},
			s:     rolling(1, 0),
			want:  []string{"delete p1 (Duplicate)", "delete p2 (Duplicate)"},
		},
	})
}

// A rolling update spends maxUnavailable: unavailable pods and nodes first, NotReady nodes passed over.
func TestPlanNodesSpendTheBudget(t *testing.T) {
	runPlanCases(t, map[string]planCase{
		"rolling update deletes one available old pod at a time": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     rolling(1, 0),
			want:  []string{"delete pa (Update)"},
		},
		"maxUnavailable 2 deletes two": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     rolling(2, 0),
			want:  []string{"delete pa (Update)", "delete pb (Update)"},
		},
		"unavailable old pods go first and cost nothing; the budget is then used up": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, starting)), view("c", testPod("pc", oldRev, available))},
			s:     rolling(1, 0),
			want:  []string{"delete pb (Update)"},
		},
		"a node without a pod uses the budget": {
			nodes: []nodeView{view("a"), view("b", testPod("pb", oldRev, available))},
			s:     rolling(1, 0),
			want:  []string{"create a@new"},
		},
		"a NotReady node is passed over and does not use the budget": {
			nodes: []nodeView{down(view("a", testPod("pa", oldRev, starting))), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     rolling(1, 0),
			want:  []string{"delete pb (Update)"},
		},
		// Down, a node carries the node lifecycle controller's NoSchedule taint: no new pod, but its pod stays.
		"a node that went down after its pod was updated uses the budget": {
			nodes: []nodeView{tainted(down(view("a", started(testPod("pa", newRev, starting))))), view("b", testPod("pb", oldRev, available)),
				view("c", testPod("pc", oldRev, available))},
			s: rolling(1, 0),
		},
		"a node that went down after its pod was updated stops a surge too": {
			nodes: []nodeView{tainted(down(view("a", started(testPod("pa", newRev, starting))))), view("b", testPod("pb", oldRev, available))},
			s:     rolling(1, 1),
		},
		"a node down before its update pod could start is passed over": {
			nodes: []nodeView{tainted(down(view("a", testPod("pa", newRev, starting)))), view("b", testPod("pb", oldRev, available)),
				view("c", testPod("pc", oldRev, available))},
			s:    rolling(1, 0),
			want: []string{"delete pb (Update)"},
		},
	})
}

// The partition, the canary selector, a pause and OnDelete hold nodes back.
func TestPlanNodesHoldBack(t *testing.T) {
	runPlanCases(t, map[string]planCase{
		"partition holds the last nodes by name": {
			nodes: []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     strategy{maxUnavailable: 3, partition: 2},
		},
		"partition 1 of 3 updates a and b": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     strategy{maxUnavailable: 3, partition: 1},
			want:  []string{"delete pa (Update)", "delete pb (Update)"},
		},
		// d joins after the rollout held c and b: it is updated, and c and b stay held (by name alone, d would be held,
		// and b updated).
		"partition: a node joining last by name takes no held node's place": {
			nodes: []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", oldRev, available)),
				view("c", testPod("pc", oldRev, available)), view("d")},
			s:    strategy{maxUnavailable: 3, partition: 2},
			want: []string{"create d@new"},
		},
		"partition: a held node leaving updates no other": {
			nodes: []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", oldRev, available))},
			s:     strategy{maxUnavailable: 3, partition: 2},
		},
		"a held-back node gets the current revision when its pod is replaced": {
			nodes: []nodeView{view("a", testPod("pa", newRev, available)), view("b")},
			s:     strategy{maxUnavailable: 1, partition: 1},
			want:  []string{"create b@old"},
		},
		"canary selector: only matching nodes update": {
			nodes: []nodeView{notCanary(view("a", testPod("pa", oldRev, available))), view("b", testPod("pb", oldRev, available)), notCanary(view("c"))},
			s:     rolling(3, 0),
			want:  []string{"create c@old", "delete pb (Update)"},
		},
		"paused: no update, new nodes still get the update revision": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b")},
			s:     strategy{maxUnavailable: 1, paused: true},
			want:  []string{"create b@new"},
		},
		"OnDelete: old pods stay; a deleted one comes back new": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b")},
			s:     strategy{onDelete: true, maxUnavailable: 1},
			want:  []string{"create b@new"},
		},
	})
}

// With maxSurge, new pods start beside old ones, which go once the new ones are available.
func TestPlanNodesSurge(t *testing.T) {
	runPlanCases(t, map[string]planCase{
		"surge starts new pods beside old ones, maxSurge at a time": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))},
			s:     rolling(0, 2),
			want:  []string{"create a@new", "create b@new"},
		},
		"surge deletes the old pod once the new one is available": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available), testPod("pa2", newRev, available)),
				view("b", testPod("pb", oldRev, available), testPod("pb2", newRev, starting)), view("c", testPod("pc", oldRev, available))},
			s:    rolling(0, 2),
			want: []string{"create c@new", "delete pa (Update)"},
		},
		"surge replaces an unavailable old pod directly": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, starting))},
			s:     rolling(0, 1),
			want:  []string{"delete pa (Update)"},
		},
		"surge passes over a NotReady node": {
			nodes: []nodeView{down(view("a", testPod("pa", oldRev, available))), view("b", testPod("pb", oldRev, available))},
			s:     rolling(0, 1),
			want:  []string{"create b@new"},
		},
	})
}

// readyFor makes p ready since d before now.
func readyFor(p *corev1.Pod, d time.Duration) *corev1.Pod {
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d))
	return p
}

func TestAvailabilityWaitsForMinReadySeconds(t *testing.T) {
	p := testPod("p", newRev, available)
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-4 * time.Second))
	if ok, wait := availability(p, 10, now); ok || wait != 6*time.Second {
		t.Fatalf("ready 4s of minReadySeconds 10: available=%v wait=%s, want false and 6s", ok, wait)
	}
	if ok, wait := availability(p, 3, now); !ok || wait != 0 {
		t.Fatalf("ready 4s of minReadySeconds 3: available=%v wait=%s, want true", ok, wait)
	}
	plan := planNodes([]nodeView{view("a", p), view("b", testPod("pb", oldRev, available))},
		strategy{maxUnavailable: 1, minReadySeconds: 10}, newRev, oldRev, now)
	if len(plan.deletes) != 0 || plan.requeueAfter != 6*time.Second {
		t.Fatalf("while a's new pod is not yet available: deletes %v, requeue %s; want none and 6s", summary(plan), plan.requeueAfter)
	}
}

func TestResolveStrategy(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for name, tc := range map[string]struct {
		knobs    *rollingUpdateKnobs
		onDelete bool
		hostPort bool
		desired  int
		want     strategy
	}{
		"defaults":                  {knobs: &rollingUpdateKnobs{maxUnavailable: num(1), maxSurge: num(0)}, desired: 10, want: strategy{maxUnavailable: 1}},
		"percent rounds up":         {knobs: &rollingUpdateKnobs{maxUnavailable: pct("10%"), maxSurge: pct("5%")}, desired: 25, want: strategy{maxUnavailable: 3, maxSurge: 2}},
		"host port turns surge off": {knobs: &rollingUpdateKnobs{maxUnavailable: num(0), maxSurge: num(1)}, hostPort: true, desired: 5, want: strategy{maxUnavailable: 1}},
		"partition and pause":       {knobs: &rollingUpdateKnobs{maxUnavailable: num(2), partition: 3, paused: true}, desired: 5, want: strategy{maxUnavailable: 2, partition: 3, paused: true}},
		"OnDelete":                  {onDelete: true, desired: 5, want: strategy{onDelete: true, maxUnavailable: 1}},
		"in place":                  {knobs: &rollingUpdateKnobs{maxUnavailable: num(1), inPlace: true}, desired: 5, want: strategy{maxUnavailable: 1, inPlace: true}},
		// Admission refuses in place with surge; should one get past it, the surge wins.
		"in place with surge":     {knobs: &rollingUpdateKnobs{maxUnavailable: num(0), maxSurge: num(1), inPlace: true}, desired: 5, want: strategy{maxSurge: 1}},
		"in place under OnDelete": {knobs: &rollingUpdateKnobs{inPlace: true}, onDelete: true, desired: 5, want: strategy{onDelete: true, maxUnavailable: 1}},
	} {
		if got := resolveStrategy(tc.knobs, tc.onDelete, tc.hostPort, 0, tc.desired); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", name, got, tc.want)
		}
	}
}

// The controller never surges a template whose pods bind ports on their node, also when the webhook is down.
func TestUsesHostPorts(t *testing.T) {
	for name, tc := range map[string]struct {
		spec corev1.PodSpec
		want bool
	}{
		"no ports":     {corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
		"host port":    {corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}}}}, true},
		"host network": {corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 9100}}}}}, true},
	} {
		if got := usesHostPorts(&tc.spec); got != tc.want {
			t.Errorf("%s: usesHostPorts = %v, want %v", name, got, tc.want)
		}
	}
}

// Found by FuzzPlanNodes once it updated in place: a node tainted NoSchedule after its pod started keeps that pod and
// updates it in place; when that pod is already unavailable, its node is out of service as much as one the budget
// counts, so the pass must not also take the available pod of another node with a budget of one.
func TestAnUnavailablePodUpdatedInPlaceOnATaintedNodeCostsTheBudget(t *testing.T) {
	s := strategy{maxUnavailable: 1, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	nodes := []nodeView{tainted(view("a", testPod("pa", oldRev, starting))), view("b", testPod("pb", oldRev, available))}
	if got := summary(planNodes(nodes, s, newRev, oldRev, now)); len(got) != 0 {
		t.Fatalf("plan %v: the unavailable pod on a is updated (not in the summary) and b keeps its available pod", got)
	}
	p := planNodes(nodes, s, newRev, oldRev, now)
	if len(p.updates) != 1 || p.updates[0].pod.Name != "pa" {
		t.Fatalf("updates %v, want pa in place", p.updates)
	}
}
