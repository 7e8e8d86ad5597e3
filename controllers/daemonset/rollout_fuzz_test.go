package daemonset

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/keelson-dev/keelson/internal/fuzzinput"
)

// fuzzPodStates are the pod states the rollout planner tells apart.
var fuzzPodStates = []func(*corev1.Pod){
	func(p *corev1.Pod) { // available for an hour
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	},
	func(p *corev1.Pod) { // ready for ten seconds: available only without minReadySeconds
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Second))}}
	},
	func(p *corev1.Pod) { // running, not ready
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	},
	func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, // running, no conditions yet
	func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending },
	func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed },
	func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded },
}

// fuzzInPlaceState is where a pod stands in an update in place: its readiness gate InPlaceReadyCondition (absent,
// not yet set, closed or open) and its update record against the container the kubelet runs. restarting is what the
// harness knows of it, apart from the planner's reading: whether the kubelet has yet to run the updated container.
type fuzzInPlaceState struct {
	restarting bool
	apply      func(*corev1.Pod)
}

// fuzzInPlaceStates are the states FuzzPlanNodes gives pods. The first is an exhausted input's; new states go last,
// so that the inputs in the corpus keep theirs.
var fuzzInPlaceStates = []fuzzInPlaceState{
	{false, func(*corev1.Pod) {}},                // never updated in place, no gate
	{false, func(p *corev1.Pod) { gate(p, "") }}, // created with the gate, not yet opened
	{true, func(p *corev1.Pod) { // just patched: the old container still runs, not ready
		gate(p, corev1.ConditionFalse)
		record(p, p.Labels[RevisionLabel], "cri://1", false, time.Hour)
	}},
	{true, func(p *corev1.Pod) { // restarted, not ready yet
		gate(p, corev1.ConditionFalse)
		record(p, p.Labels[RevisionLabel], "cri://2", false, time.Minute)
	}},
	{false, func(p *corev1.Pod) { // restarted and ready: the gate is to open
		gate(p, corev1.ConditionFalse)
		record(p, p.Labels[RevisionLabel], "cri://2", true, 2*time.Hour)
	}},
	{false, func(p *corev1.Pod) { // done
		gate(p, corev1.ConditionTrue)
		record(p, p.Labels[RevisionLabel], "cri://2", true, 2*time.Hour)
	}},
	{false, func(p *corev1.Pod) { // a record of another revision counts for nothing
		gate(p, corev1.ConditionFalse)
		record(p, "stale", "cri://1", false, time.Hour)
	}},
	{true, func(p *corev1.Pod) { // just patched: the old container still runs, and is ready
		gate(p, corev1.ConditionFalse)
		record(p, p.Labels[RevisionLabel], "cri://1", true, time.Hour)
	}},
	{false, func(p *corev1.Pod) { // restarted and ready five seconds ago: minReadySeconds counts from then
		gate(p, corev1.ConditionFalse)
		record(p, p.Labels[RevisionLabel], "cri://2", true, 5*time.Second)
	}},
}

// gate gives p the readiness gate InPlaceReadyCondition, with the condition at status ("" for none yet).
func gate(p *corev1.Pod, status corev1.ConditionStatus) {
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: InPlaceReadyCondition}}
	if status != "" {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: InPlaceReadyCondition, Status: status})
	}
}

// record marks p as updated in place to revision, its container "app" having run as cri://1 before, and now running
// as id, ready or not, started ago.
func record(p *corev1.Pod, revision, id string, ready bool, ago time.Duration) {
	p.Annotations = map[string]string{InPlaceUpdateAnnotation: `{"revision":"` + revision +
		`","containers":{"app":{"id":"cri://1","image":"app:1"}}}`}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: id, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-ago))}}}}
}

// fuzzNodes builds up to eight nodes, sorted by name as planNodes expects, each with up to three pods of the update
// revision, the current one, another or none, in any state, some of them part-way through an update in place.
func fuzzNodes(in *fuzzinput.Source) []nodeView {
	nodes := make([]nodeView, in.Intn(9))
	for i := range nodes {
		n := &nodes[i]
		n.name = fmt.Sprintf("n%d", i)
		n.shouldRun = in.Intn(4) != 0
		n.shouldContinueRunning = n.shouldRun || in.Bool() // a node that admits a new pod keeps a running one
		n.down = in.Intn(5) == 0
		n.canary = in.Intn(4) != 0
		n.terminating = in.Intn(3) / 2
		if in.Intn(4) == 0 {
			n.backoff = time.Duration(1+in.Intn(60)) * time.Second
		}
		for j := range in.Intn(4) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-p%d", n.name, j),
				CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(in.Intn(3)) * time.Hour))}}
			if rev := in.Pick(newRev, oldRev, "other", "", "none"); rev != "none" {
				p.Labels = map[string]string{RevisionLabel: rev}
			}
			p.UID = types.UID(p.Name) // planGates tells pods apart by UID
			fuzzPodStates[in.Intn(len(fuzzPodStates))](p)
			n.pods = append(n.pods, p)
		}
	}
	return nodes
}

// fuzzInPlace puts each pod somewhere in an update in place, and returns the pods the kubelet has yet to restart.
// FuzzPlanNodes reads these states after every other value: an input written before them decodes to the same
// strategy and pods, its bytes left over (if any) now choosing the pods' states.
func fuzzInPlace(in *fuzzinput.Source, nodes []nodeView) map[*corev1.Pod]bool {
	restarting := map[*corev1.Pod]bool{}
	for _, n := range nodes {
		for _, p := range n.pods {
			st := fuzzInPlaceStates[in.Intn(len(fuzzInPlaceStates))]
			st.apply(p)
			restarting[p] = st.restarting
		}
	}
	return restarting
}

// FuzzPlanNodes plans a rollout step for any nodes and pods under any update strategy, updates in place included, and
// checks what must hold whatever they are: no node loses its last available pod beyond the maxUnavailable budget
// (and none at all with surge), a pod updated in place counting as one lost; no more nodes run an old and a new pod
// side by side than maxSurge allows; nodes held back by the partition, the canary selector, a pause or OnDelete keep
// their pods; pods are created only where they should run; only pods that exist are deleted or updated, once. Pods
// stand anywhere in an update in place too: a pod the kubelet has yet to restart counts as unavailable, and its
// readiness gate opens once its containers run again, never before. And it checks progress: a DaemonSet not yet
// converged, with nothing holding it back, gets a plan that does something (an empty plan would pass every check
// above). Every check holds for the plan cut to a client budget too (plan.share).
func FuzzPlanNodes(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x01\x02\x01\x00\x00\x00\x00\x04\x01\x01\x01\x01\x00\x00\x00\x01\x00\x01\x00\x01\x00\x00\x00\x01\x01\x00\x01\x00\x00"))
	f.Add([]byte("\x02\x02\x02\x02\x32\x00\x00\x00\x00\x03\x01\x01\x01\x01\x00\x00\x00\x02\x00\x00\x00\x01\x01\x02\x01\x01\x00\x00\x00\x02\x00\x00\x02\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		var knobs *rollingUpdateKnobs
		if in.Intn(6) != 0 {
			knobs = &rollingUpdateKnobs{maxUnavailable: in.IntOrString(), maxSurge: in.IntOrString(),
				partition: in.SmallInt(9), paused: in.Intn(5) == 0, inPlace: in.Intn(3) == 0}
		}
		onDelete, hostPort := in.Intn(6) == 0, in.Intn(4) == 0
		minReadySeconds := int32(in.Intn(3) * 30)
		currentHash := in.Pick(oldRev, newRev, "")
		nodes := fuzzNodes(in)
		desired := 0
		for _, n := range nodes {
			if n.shouldRun {
				desired++
			}
		}
		s := resolveStrategy(knobs, onDelete, hostPort, minReadySeconds, desired)
		if hostPort && s.maxSurge != 0 {
			t.Fatalf("a template with a host port surges: %+v", s)
		}
		if s.inPlace {
			s.inPlaceFrom = map[string]bool{oldRev: true, "other": in.Bool()}
		}
		budget := 0 // the controller cuts a pass to its client budget: any cut must keep every check
		if in.Bool() {
			budget = minWritesPerPass + in.Intn(20)
		}
		restarting := fuzzInPlace(in, nodes)
		before := snapshot(nodes)
		before.restarting = restarting
		p := planNodes(nodes, s, newRev, currentHash, now)
		checkGates(t, nodes, before, p)
		if budget > 0 {
			p.share(budget)
		}
		checkPlan(t, nodes, s, before, p)
		checkProgress(t, nodes, s, before, p)
	})
}

// podSnapshot is what the checks need to know of the nodes before planning (planNodes reorders pod slices).
type podSnapshot struct {
	nodeOf map[*corev1.Pod]string
	live   map[string][]*corev1.Pod
	// restarting are the pods the kubelet has yet to restart after an update in place, as the harness made them.
	restarting map[*corev1.Pod]bool
}

func snapshot(nodes []nodeView) podSnapshot {
	snap := podSnapshot{nodeOf: map[*corev1.Pod]string{}, live: map[string][]*corev1.Pod{}}
	for _, n := range nodes {
		for _, pod := range n.pods {
			snap.nodeOf[pod] = n.name
			if !isTerminal(pod) {
				snap.live[n.name] = append(snap.live[n.name], pod)
			}
		}
	}
	return snap
}

// unavailableNodes counts the nodes that should run the pod (or keep one the plan updates in place), are up, and
// have no available live pod left once gone (deleted, or updated in place: its containers restart) are: the nodes
// maxUnavailable budgets. The nodes counted are the same before the plan and after it (updated names the plan's
// updates): the plan's cost is the available pods it takes, not the nodes it brings into the count.
func unavailableNodes(nodes []nodeView, snap podSnapshot, s strategy, updated, gone map[*corev1.Pod]bool) int {
	count := 0
	for _, n := range nodes {
		updatedHere := slices.ContainsFunc(snap.live[n.name], func(p *corev1.Pod) bool {
			return p.Labels[RevisionLabel] == newRev || updated[p] || updatableInPlaceOnly(n, p, s)
		})
		inPlaceOnly := admitsNoNewPod(n) && s.inPlace && n.canary && updatedHere
		if (!n.shouldRun && !inPlaceOnly) || n.down {
			continue
		}
		available := false
		for _, pod := range snap.live[n.name] {
			ok, _ := availability(pod, s.minReadySeconds, now)
			available = available || (ok && !gone[pod])
		}
		if !available {
			count++
		}
	}
	return count
}

// surgingNodes counts the nodes where a live pod of the update revision (or one about to be created) runs beside a
// live pod of another revision.
func surgingNodes(nodes []nodeView, snap podSnapshot, deleted map[*corev1.Pod]bool, created map[string]bool) int {
	count := 0
	for _, n := range nodes {
		hasNew, hasOld := created[n.name], false
		for _, pod := range snap.live[n.name] {
			if deleted[pod] {
				continue
			}
			if pod.Labels[RevisionLabel] == newRev {
				hasNew = true
			} else {
				hasOld = true
			}
		}
		if hasNew && hasOld {
			count++
		}
	}
	return count
}

func checkPlan(t testing.TB, nodes []nodeView, s strategy, snap podSnapshot, p plan) {
	t.Helper()
	c := planCheck{t: t, nodes: nodes, s: s, snap: snap, p: p, byName: map[string]nodeView{}}
	for _, n := range nodes {
		c.byName[n.name] = n
	}
	deleted := c.deletes()
	created := c.creates(deleted)
	if p.requeueAfter < 0 {
		c.fail("requeue after %s", p.requeueAfter)
	}
	gone, updated := c.updates(deleted)
	unavailableBefore := unavailableNodes(nodes, snap, s, updated, nil)
	unavailableAfter := unavailableNodes(nodes, snap, s, updated, gone)
	limit := max(unavailableBefore, s.maxUnavailable)
	if s.maxSurge > 0 || s.onDelete || s.paused {
		limit = unavailableBefore // no budget to spend: nothing available may go
	}
	if unavailableAfter > limit {
		c.fail("leaves %d nodes without an available pod (%d before)", unavailableAfter, unavailableBefore)
	}
	surgingBefore := surgingNodes(nodes, snap, nil, nil)
	if surgingAfter := surgingNodes(nodes, snap, deleted, created); surgingAfter > max(surgingBefore, s.maxSurge) {
		c.fail("%d nodes surge (%d before)", surgingAfter, surgingBefore)
	}
}

// planCheck is one plan under checkPlan's checks.
type planCheck struct {
	t      testing.TB
	nodes  []nodeView
	s      strategy
	snap   podSnapshot
	p      plan
	byName map[string]nodeView
}

// fail fails the check, with the strategy, the plan and the nodes it was made for.
func (c planCheck) fail(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf(format+"\nunder %+v\nplan: %s\nnodes: %s", append(args, c.s, describePlan(c.p), describeNodes(c.nodes, c.s))...)
}

// deletes checks that only pods that exist are deleted, once, and for the update only where the rollout may go.
func (c planCheck) deletes() map[*corev1.Pod]bool {
	c.t.Helper()
	deleted := map[*corev1.Pod]bool{}
	for _, d := range c.p.deletes {
		node, ok := c.snap.nodeOf[d.pod]
		switch {
		case !ok:
			c.fail("deletes pod %s that is on no node", d.pod.Name)
		case deleted[d.pod]:
			c.fail("deletes pod %s twice", d.pod.Name)
		case d.reason == deleteUpdate && (c.s.onDelete || c.s.paused):
			c.fail("deletes %s for the update while the rollout may not (onDelete %v, paused %v)", d.pod.Name, c.s.onDelete, c.s.paused)
		case d.reason == deleteUpdate && !heldBackFree(c.nodes, c.s, node):
			c.fail("deletes %s for the update on node %s, which the partition or canary selector holds back", d.pod.Name, node)
		}
		deleted[d.pod] = true
	}
	return deleted
}

// creates checks that pods are created only where they should run, one a node, with a revision, and beside a live
// pod only as a surge allows.
func (c planCheck) creates(deleted map[*corev1.Pod]bool) map[string]bool {
	c.t.Helper()
	created := map[string]bool{}
	for _, cr := range c.p.creates {
		n := c.byName[cr.node]
		switch {
		case !n.shouldRun:
			c.fail("creates a pod on %s, which should not run one", cr.node)
		case created[cr.node]:
			c.fail("creates two pods on %s", cr.node)
		case cr.hash == "":
			c.fail("creates a pod without a revision on %s", cr.node)
		}
		for _, pod := range c.snap.live[cr.node] {
			if !deleted[pod] && (c.s.maxSurge == 0 || cr.hash != newRev || pod.Labels[RevisionLabel] == newRev) {
				c.fail("creates a %s pod on %s beside live pod %s (revision %q) with maxSurge %d",
					cr.hash, cr.node, pod.Name, pod.Labels[RevisionLabel], c.s.maxSurge)
			}
		}
		created[cr.node] = true
	}
	return created
}

// updates checks that pods are updated in place only when the strategy allows it, once, to the update revision,
// and not where the rollout is held back; it returns the pods gone (deleted or updated) and those updated.
func (c planCheck) updates(deleted map[*corev1.Pod]bool) (gone, updated map[*corev1.Pod]bool) {
	c.t.Helper()
	gone, updated = maps.Clone(deleted), map[*corev1.Pod]bool{}
	s := c.s
	for _, u := range c.p.updates {
		node, ok := c.snap.nodeOf[u.pod]
		switch {
		case !ok:
			c.fail("updates pod %s that is on no node", u.pod.Name)
		case gone[u.pod]:
			c.fail("updates pod %s that it deletes, or twice", u.pod.Name)
		case !s.inPlace || !s.inPlaceFrom[u.pod.Labels[RevisionLabel]]:
			c.fail("updates %s (revision %q) in place, which the strategy does not allow", u.pod.Name, u.pod.Labels[RevisionLabel])
		case s.onDelete || s.paused:
			c.fail("updates %s while the rollout may not (onDelete %v, paused %v)", u.pod.Name, s.onDelete, s.paused)
		case u.hash != newRev:
			c.fail("updates %s to revision %q, not the update revision", u.pod.Name, u.hash)
		case !heldBackFree(c.nodes, s, node) && !updatableInPlaceOnly(c.byName[node], u.pod, s):
			c.fail("updates %s on node %s, which the partition or canary selector holds back", u.pod.Name, node)
		}
		gone[u.pod], updated[u.pod] = true, true
	}
	return gone, updated
}

// checkProgress checks liveness: a DaemonSet that has not converged (a node that should run a pod has none, or runs
// one of another revision, or a node that should not run one still does) gets a plan that does something, when
// nothing may hold it back: a rolling update, not paused, no partition, every node a canary, none down, in backoff or
// with a pod on its way out, every live pod labelled with a revision and available but for pods of the update
// revision the kubelet is restarting for an update in place, and a budget larger than the nodes those take. (A plan
// that waits for the kubelet when they take the whole budget is right, not a stall.)
func checkProgress(t testing.TB, nodes []nodeView, s strategy, snap podSnapshot, p plan) {
	t.Helper()
	if s.onDelete || s.paused || s.partition > 0 || s.maxUnavailable < 1 {
		return
	}
	converged, restarting := true, 0
	for _, n := range nodes {
		free, restartingHere := unhindered(n, s, snap)
		if !free {
			return
		}
		restarting += restartingHere
		live := snap.live[n.name]
		switch {
		case n.shouldRun && (len(live) != 1 || live[0].Labels[RevisionLabel] != newRev):
			converged = false
		case !n.shouldContinueRunning && len(live) > 0:
			converged = false
		}
	}
	hasRoom := s.maxSurge > 0 || restarting < s.maxUnavailable // a surge spends none of maxUnavailable
	if !converged && hasRoom && len(p.creates)+len(p.deletes)+len(p.updates) == 0 {
		t.Fatalf("a DaemonSet not yet converged, nothing holding it back, gets an empty plan\nunder %+v\nnodes: %s",
			s, describeNodes(nodes, s))
	}
}

// unhindered reports whether nothing on node n may hold the rollout back (checkProgress), and whether its pod is one
// of the update revision the kubelet is restarting in place (1) or not (0): the node must be a canary, up, out of
// backoff, with no pod on its way out, every pod labelled with a revision and available but for that one.
func unhindered(n nodeView, s strategy, snap podSnapshot) (free bool, restarting int) {
	if !n.canary || n.down || n.backoff > 0 || n.terminating > 0 {
		return false, 0
	}
	for _, pod := range n.pods {
		if isTerminal(pod) || pod.Labels[RevisionLabel] == "" {
			return false, 0
		}
		if ok, _ := availability(pod, s.minReadySeconds, now); ok {
			continue
		}
		if !snap.restarting[pod] || pod.Labels[RevisionLabel] != newRev || !n.shouldRun || len(snap.live[n.name]) != 1 {
			return false, 0
		}
		restarting = 1
	}
	return true, restarting
}

// checkGates checks the in-place readiness gate both ways: a live pod whose containers run again after an update in
// place (or that never had one) gets its closed or unset gate opened, unless the plan deletes or updates it; and a
// gate is opened only on a live pod the plan leaves alone, that carries it not yet open, once, and never while the
// kubelet has yet to restart the pod (it would join its Services before its new containers could serve).
func checkGates(t testing.TB, nodes []nodeView, snap podSnapshot, p plan) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nnodes: %s", append(args, describeNodes(nodes, strategy{}))...)
	}
	opened, acted := map[*corev1.Pod]bool{}, map[*corev1.Pod]bool{}
	for _, d := range p.deletes {
		acted[d.pod] = true
	}
	for _, u := range p.updates {
		acted[u.pod] = true
	}
	for _, pod := range p.gatesReady {
		_, known := snap.nodeOf[pod]
		switch {
		case !known:
			fail("opens the gate of %s, which is on no node", pod.Name)
		case opened[pod]:
			fail("opens the gate of %s twice", pod.Name)
		case !hasInPlaceGate(pod) || inPlaceGateStatus(pod) == corev1.ConditionTrue:
			fail("opens the gate of %s, which has none closed", pod.Name)
		case snap.restarting[pod] || acted[pod] || isTerminal(pod):
			fail("opens the gate of %s, which is restarting in place (%v), acted on (%v) or terminal",
				pod.Name, snap.restarting[pod], acted[pod])
		}
		opened[pod] = true
	}
	for _, n := range nodes {
		for _, pod := range n.pods {
			closed := hasInPlaceGate(pod) && inPlaceGateStatus(pod) != corev1.ConditionTrue
			if closed && !opened[pod] && !snap.restarting[pod] && !acted[pod] && !isTerminal(pod) {
				fail("leaves the gate of %s closed, though its containers run again", pod.Name)
			}
		}
	}
}

// heldBackFree reports whether the rollout may update node: it should run the pod, matches the canary selector and
// is not among the last `partition` eligible nodes by name.
func heldBackFree(nodes []nodeView, s strategy, node string) bool {
	var eligible []string
	canary := false
	for _, n := range nodes {
		if n.shouldRun {
			eligible = append(eligible, n.name)
		}
		if n.name == node {
			canary = n.canary
		}
	}
	sort.Strings(eligible)
	for i, name := range eligible {
		if name == node {
			return canary && i < len(eligible)-s.partition
		}
	}
	return false
}

// describeNodes says what the planner saw, for a failure message.
func describeNodes(nodes []nodeView, s strategy) string {
	var out []string
	for _, n := range nodes {
		var pods []string
		for _, pod := range n.pods {
			ok, _ := availability(pod, s.minReadySeconds, now)
			pods = append(pods, fmt.Sprintf("%s@%q %s available=%v", pod.Name, pod.Labels[RevisionLabel], pod.Status.Phase, ok))
		}
		out = append(out, fmt.Sprintf("%s{run %v, stay %v, down %v, canary %v, terminating %d, backoff %s, pods %v}",
			n.name, n.shouldRun, n.shouldContinueRunning, n.down, n.canary, n.terminating, n.backoff, pods))
	}
	return fmt.Sprint(out)
}

func describePlan(p plan) string {
	var out []string
	for _, c := range p.creates {
		out = append(out, "create "+c.node+"@"+c.hash)
	}
	for _, u := range p.updates {
		out = append(out, "update "+u.pod.Name+" in place to "+u.hash)
	}
	for _, d := range p.deletes {
		out = append(out, "delete "+d.pod.Name+" ("+d.reason+")")
	}
	return fmt.Sprint(out)
}

// FuzzNodeEligibility decides eligibility for any node labels, taints and pod placement rules, malformed
// affinities included: a node that admits a new pod also keeps a running one, the daemon tolerations keep every
// toleration the user gave and add each automatic one once, and a NotReady node counts as down.
func FuzzNodeEligibility(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x00\x01\x01\x02\x00\x01\x01\x00\x01\x02\x01\x00"))
	f.Add([]byte("\x03\x02\x01\x01\x05\x03\x02\x01\x00\x02\x01\x03\x01\x02\x02\x01\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		keys := []string{"zone", "kubernetes.io/hostname", taintNotReady, taintUnreachable, taintUnschedulable,
			"nvidia.com/gpu", "", "bad key!"}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Word("a", "b", ""), Labels: map[string]string{}}}
		for range in.Intn(4) {
			node.Labels[in.Word(keys...)] = in.Word("a", "b", "1", "")
		}
		effects := []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectNoExecute),
			string(corev1.TaintEffectPreferNoSchedule), ""}
		for range in.Intn(4) {
			node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: in.Word(keys...), Value: in.Word("a", "x", ""),
				Effect: corev1.TaintEffect(in.Word(effects...))})
		}
		if in.Bool() {
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady,
				Status: corev1.ConditionStatus(in.Word("True", "False", "Unknown"))}}
		}
		spec := &corev1.PodSpec{NodeName: in.Pick("", "", "a", "b"), HostNetwork: in.Bool()}
		if in.Bool() {
			spec.NodeSelector = map[string]string{in.Word(keys...): in.Word("a", "b", "")}
		}
		if in.Bool() {
			var reqs []corev1.NodeSelectorRequirement
			for range in.Intn(3) {
				req := corev1.NodeSelectorRequirement{Key: in.Word(keys...), Operator: corev1.NodeSelectorOperator(in.Word(
					"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))}
				for range in.Intn(3) {
					req.Values = append(req.Values, in.Word("a", "b", "1", "x"))
				}
				reqs = append(reqs, req)
			}
			term := corev1.NodeSelectorTerm{MatchExpressions: reqs}
			if in.Bool() {
				term.MatchFields = []corev1.NodeSelectorRequirement{{Key: in.Word("metadata.name", "spec.x"),
					Operator: corev1.NodeSelectorOperator(in.Word("In", "NotIn", "Exists")), Values: []string{in.Word("a", "b")}}}
			}
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
		}
		var users []corev1.Toleration
		for range in.Intn(4) {
			users = append(users, corev1.Toleration{Key: in.Word(keys...),
				Operator: corev1.TolerationOperator(in.Word("Exists", "Equal", "")), Value: in.Word("a", "x", ""),
				Effect: corev1.TaintEffect(in.Word(effects...))})
		}
		spec.Tolerations = withDaemonTolerations(users, spec.HostNetwork)
		for i, u := range users {
			if spec.Tolerations[i] != u {
				t.Fatalf("toleration %d changed: %+v became %+v", i, u, spec.Tolerations[i])
			}
		}
		seen := map[string]int{}
		for _, tol := range spec.Tolerations[len(users):] {
			key := tol.Key + "/" + string(tol.Effect)
			if seen[key]++; seen[key] > 1 {
				t.Fatalf("automatic toleration %s added twice", key)
			}
			for _, u := range users {
				if u.Key == tol.Key && u.Effect == tol.Effect {
					t.Fatalf("automatic toleration %s added beside the user's own", key)
				}
			}
		}
		e := nodeEligibility(node, spec)
		if e.shouldRun && !e.shouldContinueRunning {
			t.Fatalf("a node that admits a new pod evicts a running one: %+v", e)
		}
		if spec.NodeName != "" && spec.NodeName != node.Name && e.shouldContinueRunning {
			t.Fatalf("eligible although spec.nodeName names %q, not %q", spec.NodeName, node.Name)
		}
		ready := len(node.Status.Conditions) == 1 && node.Status.Conditions[0].Status == corev1.ConditionTrue
		if nodeIsDown(node) == ready {
			t.Fatalf("nodeIsDown = %v for conditions %+v", nodeIsDown(node), node.Status.Conditions)
		}
	})
}

// Found by FuzzPlanNodes: a node with duplicate pods loses neither its available pod nor a pod twice.
func TestDuplicatesCostNoAvailability(t *testing.T) {
	for name, tc := range map[string]struct {
		pods  []*corev1.Pod // on node a
		other []*corev1.Pod // on node b
		s     strategy
		want  []string
	}{
		// A surge turned off, or a switch to OnDelete, mid-rollout: the old pod is the available one.
		"OnDelete keeps the available old pod": {
			pods: []*corev1.Pod{testPod("new-pod", newRev, starting), testPod("old-pod", oldRev, available)},
			s:    strategy{onDelete: true, maxUnavailable: 1},
			want: []string{"delete new-pod (Duplicate)"},
		},
		// Node b is already without an available pod: the budget of one is spent, so a's old pod must stay.
		"no surge keeps the available old pod": {
			pods:  []*corev1.Pod{testPod("new-pod", newRev, starting), testPod("old-pod", oldRev, available)},
			other: []*corev1.Pod{testPod("pb", oldRev, starting)},
			s:     rolling(1, 0),
			want:  []string{"delete new-pod (Duplicate)", "delete pb (Update)"},
		},
		// Two new pods and an old one: the spare new pod goes, the pair stays until the new pod is available.
		"surge deletes the spare new pod once": {
			pods: []*corev1.Pod{testPod("new-a", newRev, starting), testPod("new-b", newRev, starting), testPod("old-pod", oldRev, available)},
			s:    rolling(0, 1),
			want: []string{"delete new-b (Duplicate)"},
		},
	} {
		nodes := []nodeView{view("a", tc.pods...)}
		if tc.other != nil {
			nodes = append(nodes, view("b", tc.other...))
		}
		if got := summary(planNodes(nodes, tc.s, newRev, oldRev, now)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
}

// failures is a testing.TB that records what a check would fail with, and goes on: the checks' own tests show that
// each one fires.
type failures struct {
	testing.TB
	said []string
}

func (f *failures) Fatalf(format string, args ...any) {
	f.said = append(f.said, fmt.Sprintf(format, args...))
}

// The fuzz target's checks catch what they are for: an empty plan for a DaemonSet not yet converged (a planner that
// never plans passes every safety check), and an update in place of every pod under a budget of one.
func TestTheFuzzChecksFire(t *testing.T) {
	s := strategy{maxUnavailable: 1, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	nodes := func() []nodeView {
		return []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available)),
			view("c", testPod("pc", oldRev, available))}
	}
	said := func(check func(testing.TB, []nodeView, strategy, podSnapshot, plan), ns []nodeView, p plan) string {
		f := &failures{TB: t}
		check(f, ns, s, snapshot(ns), p)
		return strings.Join(f.said, "; ")
	}

	ns := nodes()
	if got := said(checkProgress, ns, plan{}); !strings.Contains(got, "gets an empty plan") {
		t.Errorf("an empty plan passed the liveness check: %q", got)
	}
	if got := said(checkProgress, ns, planNodes(ns, s, newRev, oldRev, now)); got != "" {
		t.Errorf("the planner's own plan failed the liveness check: %q", got)
	}

	ns = nodes()
	all := plan{}
	for _, n := range ns {
		all.updates = append(all.updates, podUpdate{pod: n.pods[0], hash: newRev})
	}
	if got := said(checkPlan, ns, all); !strings.Contains(got, "leaves 3 nodes without an available pod") {
		t.Errorf("every pod updated in place under a budget of one passed: %q", got)
	}
	if got := said(checkPlan, ns, planNodes(ns, s, newRev, oldRev, now)); got != "" {
		t.Errorf("the planner's own plan failed the safety check: %q", got)
	}
}

// The fuzz target's in-place checks catch what they are for: an empty plan beside a pod the kubelet is restarting
// while budget is left, a gate left closed once the containers run again, and gates opened too soon, twice, or on a
// pod without one; and they pass the planner's own plan, and a plan that waits for the kubelet with the budget spent.
func TestTheInPlaceFuzzChecksFire(t *testing.T) {
	s := strategy{maxUnavailable: 2, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	ns := []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", newRev, available)),
		view("c", testPod("pc", oldRev, available))}
	// Node a's pod waits for the kubelet to restart its container after an update in place (its old container still
	// ready); b's has restarted and is ready, its gate still closed; c's is still to update. A budget of two leaves
	// room for c.
	restarting := map[*corev1.Pod]bool{}
	for i, state := range []int{7, 4, 0} {
		pod := ns[i].pods[0]
		pod.UID = types.UID(pod.Name)
		fuzzInPlaceStates[state].apply(pod)
		restarting[pod] = fuzzInPlaceStates[state].restarting
	}
	withRestarts := func(check func(testing.TB, []nodeView, strategy, podSnapshot, plan), p plan) string {
		f := &failures{TB: t}
		snap := snapshot(ns)
		snap.restarting = restarting
		check(f, ns, s, snap, p)
		return strings.Join(f.said, "; ")
	}
	gates := func(p plan) string {
		return withRestarts(func(tb testing.TB, ns []nodeView, _ strategy, snap podSnapshot, p plan) {
			checkGates(tb, ns, snap, p)
		}, p)
	}
	if got := withRestarts(checkProgress, plan{}); !strings.Contains(got, "gets an empty plan") {
		t.Errorf("an empty plan with budget left beside a pod restarting in place passed the liveness check: %q", got)
	}
	own := planNodes(ns, s, newRev, oldRev, now)
	if got := withRestarts(checkProgress, own); got != "" {
		t.Errorf("the planner's own plan failed the liveness check: %q", got)
	}
	if got := gates(own); got != "" {
		t.Errorf("the planner's own gates failed the gate check: %q", got)
	}
	if got := gates(plan{}); !strings.Contains(got, "leaves the gate of pb closed") {
		t.Errorf("a gate left closed after the restart passed: %q", got)
	}
	if got := gates(plan{gatesReady: []*corev1.Pod{ns[0].pods[0]}}); !strings.Contains(got, "opens the gate of pa, which is restarting") {
		t.Errorf("a gate opened while the kubelet restarts the pod passed: %q", got)
	}
	if got := gates(plan{gatesReady: []*corev1.Pod{ns[1].pods[0], ns[1].pods[0]}}); !strings.Contains(got, "opens the gate of pb twice") {
		t.Errorf("a gate opened twice passed: %q", got)
	}
	if got := gates(plan{gatesReady: []*corev1.Pod{ns[1].pods[0], ns[2].pods[0]}}); !strings.Contains(got, "opens the gate of pc, which has none closed") {
		t.Errorf("a gate opened on a pod without one passed: %q", got)
	}
	s.maxUnavailable = 1
	if got := withRestarts(checkProgress, plan{}); got != "" {
		t.Errorf("an empty plan waiting for the kubelet with the budget spent failed the liveness check: %q", got)
	}
}
