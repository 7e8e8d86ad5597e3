package daemonset

import (
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// nodeView is what the planner knows about one node: whether it should run the pod and the DaemonSet's pods on it.
// Pods pinned to a node that no longer exists get a view with zero eligibility, so they are removed.
type nodeView struct {
	name string
	eligibility
	// down: NotReady or unreachable. A rollout passes over it, unless the update may have brought it down
	// (brokenByUpdate): then it uses up the maxUnavailable budget.
	down bool
	// canary: matches rollingUpdate.selector (true when there is none).
	canary bool
	// pods are the DaemonSet's pods on the node that are not being deleted.
	pods []*corev1.Pod
	// terminating counts the DaemonSet's pods on the node that are being deleted.
	terminating int
	// backoff is how long failed pods on the node must still wait before they are replaced; 0 when they need not.
	backoff time.Duration
	// joined is when the node was created (zero for a node the cache no longer has).
	joined time.Time
}

// strategy is the resolved update strategy.
type strategy struct {
	onDelete bool
	paused   bool
	// maxSurge and maxUnavailable are absolute node counts.
	maxSurge, maxUnavailable int
	partition                int
	minReadySeconds          int32
	// inPlace: rollingUpdate.inPlace is IfPossible (and there is no surge). inPlaceFrom then lists the revisions
	// whose pods can be patched to the update revision rather than replaced.
	inPlace     bool
	inPlaceFrom map[string]bool
	// newPodsAt, when set, is the revision of every pod created (a rollout paused by its failure policy gives nodes
	// that join or lose their pod the revision that ran everywhere, not the failed one).
	newPodsAt string
	// rollingBackFrom, under a rollback, is the failed revision: every node running one of its pods is a target,
	// whatever the partition or canary selector hold back.
	rollingBackFrom string
}

// podCreate asks for a pod of revision hash on node.
type podCreate struct {
	node string
	hash string
	// surge: the node runs an old pod the new one goes beside, which takes one of maxSurge's slots.
	surge bool
}

// podUpdate asks for pod to be updated in place to revision hash.
type podUpdate struct {
	pod  *corev1.Pod
	hash string
	// keepIfRefused: the pod is on a node that admits no new pod, so a refused update leaves it as it is rather
	// than replacing it.
	keepIfRefused bool
}

// podDelete asks for pod's deletion, and says why (for events and logs).
type podDelete struct {
	pod    *corev1.Pod
	reason string
	// endsSurge: the old pod goes beside an available new one, which frees a slot of maxSurge for a create of the
	// same pass.
	endsSurge bool
}

// Reasons a pod is deleted.
const (
	deleteMisscheduled = "Misscheduled"
	deleteFailed       = "Failed"
	deleteSucceeded    = "Succeeded"
	deleteDuplicate    = "Duplicate"
	deleteUpdate       = "Update"
)

// plan is what one reconcile should do.
type plan struct {
	creates []podCreate
	deletes []podDelete
	updates []podUpdate
	// gatesReady are pods whose readiness gate InPlaceReadyCondition is to be set True: new pods, and pods whose
	// update in place is done.
	gatesReady []*corev1.Pod
	// failedNodes are nodes whose failed (or succeeded) pods are deleted now: their backoff grows.
	failedNodes []string
	// requeueAfter is when time-based work is next due (backoff ends, a pod becomes available); 0 for never.
	requeueAfter time.Duration
}

func (p *plan) requeue(d time.Duration) {
	if d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
		p.requeueAfter = d
	}
}

// resolveStrategy turns the DaemonSet's knobs into node counts for desired eligible nodes. Percentages round up,
// as apps/v1's do; a template with a host port never surges (the surge pod could not bind the port).
func resolveStrategy(rollingUpdate *rollingUpdateKnobs, onDelete bool, hostPort bool, minReadySeconds int32, desired int) strategy {
	s := strategy{onDelete: onDelete, minReadySeconds: minReadySeconds, maxUnavailable: 1}
	if onDelete || rollingUpdate == nil {
		return s
	}
	s.paused = rollingUpdate.paused
	s.partition = rollingUpdate.partition
	s.inPlace = rollingUpdate.inPlace
	if rollingUpdate.maxUnavailable != nil {
		s.maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(rollingUpdate.maxUnavailable, desired, true)
	}
	if rollingUpdate.maxSurge != nil && !hostPort {
		s.maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(rollingUpdate.maxSurge, desired, true)
	}
	if s.maxSurge == 0 && s.maxUnavailable == 0 {
		s.maxUnavailable = 1 // admission forbids both 0; a host port can turn surge off, and then one at a time
	}
	if s.maxSurge > 0 {
		s.inPlace = false // admission forbids both; surge starts a second pod, which in place never does
	}
	return s
}

// rollingUpdateKnobs are the rollingUpdate fields the planner reads, with defaults applied.
type rollingUpdateKnobs struct {
	maxSurge, maxUnavailable *intstr.IntOrString
	partition                int
	paused                   bool
	inPlace                  bool
}

// availability says whether pod is available: ready for minReadySeconds. When it is ready but not yet for long
// enough, wait says how long until it is. A pod updated in place is ready from when its last updated container
// started again, if that is later than its Ready condition says (the kubelet may restart a container without the
// pod's Ready condition ever turning false).
func availability(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	if pod.Status.Phase != corev1.PodRunning {
		return false, 0
	}
	restarted, since := inPlaceRestarted(pod)
	if !restarted {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return false, 0
		}
		if minReadySeconds == 0 {
			return true, 0
		}
		if c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
		readyFor := now.Sub(since)
		min := time.Duration(minReadySeconds) * time.Second
		if readyFor >= min {
			return true, 0
		}
		return false, min - readyFor
	}
	return false, 0
}

// isReady reports whether the pod is ready; one updated in place is not until its updated containers run again.
func isReady(pod *corev1.Pod) bool {
	if restarted, _ := inPlaceRestarted(pod); !restarted {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// updateTargets marks which nodes the rollout may update: nodes that should run the pod, match the canary selector
// and are not among the `partition` nodes held back. The nodes held back are, first, nodes that run a pod of another
// revision than the update one, then nodes without a pod, then nodes already updated, each group from the last name
// down: at the start of a rollout that is the last `partition` nodes by name, and a node joining or leaving later
// moves no other node in or out (were it the last `partition` names whatever the pods, a new node named last would
// take a held node's place and that node would be updated, a held node leaving would hand its place to an updated
// one, and the number of old pods would drift from the partition). An updated pod is never taken back.
func updateTargets(nodes []nodeView, s strategy, updateHash string) map[string]bool {
	type ranked struct {
		name  string
		group int // 0: another revision, 1: no pod, 2: updated
	}
	var eligible []ranked
	for _, n := range nodes {
		if !n.shouldRun {
			continue
		}
		group := 1
		for _, pod := range n.pods {
			if pod.Labels[RevisionLabel] != updateHash {
				group = 0
				break
			}
			group = 2
		}
		eligible = append(eligible, ranked{n.name, group})
	}
	sort.Slice(eligible, func(i, j int) bool {
		if eligible[i].group != eligible[j].group {
			return eligible[i].group < eligible[j].group
		}
		return eligible[i].name > eligible[j].name
	})
	held := map[string]bool{}
	for _, e := range eligible[:min(max(s.partition, 0), len(eligible))] {
		held[e.name] = true
	}
	targets := map[string]bool{}
	for _, n := range nodes {
		if n.shouldRun && n.canary && !held[n.name] {
			targets[n.name] = true
		}
		if s.rollingBackFrom != "" && n.shouldRun &&
			slices.ContainsFunc(n.pods, func(p *corev1.Pod) bool { return p.Labels[RevisionLabel] == s.rollingBackFrom }) {
			targets[n.name] = true
		}
	}
	return targets
}

// planNodes decides, for nodes sorted by name, which pods to create, delete and update in place, and which pods'
// in-place readiness gates to open. updateHash is the template's revision; currentHash the revision the rollout
// started from (pods on nodes the rollout holds back are recreated from it); both are the same when no rollout is
// under way.
func planNodes(nodes []nodeView, s strategy, updateHash, currentHash string, now time.Time) plan {
	p := planPods(nodes, s, updateHash, currentHash, now)
	planGates(nodes, &p)
	p.bound(maxWritesPerPass)
	return p
}

// maxWritesPerPass caps each kind of pod write one pass makes (creations, deletions, updates in place, gate
// openings), as kube-controller-manager caps a DaemonSet's burst at 250: on a cluster where thousands of nodes join
// at once, one pass would otherwise hold thousands of requests in flight, and keep the DaemonSet's worker for as
// long. The rest is for the next pass, which the writes' own events bring. The controller cuts a pass further to
// what its client budget sends in about a second, all kinds together (writesPerPassFor, plan.share).
const maxWritesPerPass = 250

// passWriteWindow is about how long one pass's writes may wait for the client budget; minWritesPerPass the least a
// pass makes, however small the budget.
const (
	passWriteWindow  = time.Second
	minWritesPerPass = 5
)

// writesPerPassFor is how many pod writes a pass makes in all (plan.share) under a client budget of qps requests a
// second: what the budget sends in passWriteWindow, within [minWritesPerPass, maxWritesPerPass]. A pass holds its
// DaemonSet's worker while its writes wait for tokens: 250 creations under the default 50 a second held it 5 s, its
// status write behind them, and made the longest passes at 10,000 nodes. Smaller passes cost no throughput while the
// budget's burst covers the moment between two passes (the cache catching up, the next plan): the tokens not spent
// then are spent by the next pass.
func writesPerPassFor(qps float32) int {
	n := min(float64(qps)*passWriteWindow.Seconds(), maxWritesPerPass) // before the conversion, which would overflow
	return max(int(n), minWritesPerPass)
}

// bound cuts each kind of write to at most limit, in node order, and asks for another pass when it cut any.
func (p *plan) bound(limit int) {
	p.cut(min(len(p.creates), limit), min(len(p.deletes), limit), min(len(p.updates), limit), min(len(p.gatesReady), limit))
}

// share cuts the plan to at most limit pod writes in all, shared in turn among the kinds of write that have work (so
// a flood of one kind never starves another), every update in place costing two when any of them has the in-place
// readiness gate (its gate is closed first), and asks for another pass when it cut any. The status, revision and
// event writes of the pass come on top.
func (p *plan) share(limit int) {
	updateCost := 1
	for _, u := range p.updates {
		if hasInPlaceGate(u.pod) {
			updateCost = 2
			break
		}
	}
	n := shareOut(limit, []int{len(p.deletes), len(p.updates), len(p.creates), len(p.gatesReady)}, []int{1, updateCost, 1, 1})
	p.cut(n[2], n[0], n[1], n[3])
}

// shareOut hands out limit in turn, one item of each kind with items left at a time, an item of kind i costing
// costs[i], until nothing more fits: how many of each kind fit.
func shareOut(limit int, wants, costs []int) []int {
	got := make([]int, len(wants))
	for progress := true; progress; {
		progress = false
		for i := range wants {
			if got[i] < wants[i] && costs[i] <= limit {
				got[i]++
				limit -= costs[i]
				progress = true
			}
		}
	}
	return got
}

// cut keeps the first creates, deletes, updates and gates of each kind, and asks for another pass when it cut any.
// A failed pod's node keeps its backoff only when its deletion stays in the plan.
func (p *plan) cut(creates, deletes, updates, gates int) {
	if creates == len(p.creates) && deletes == len(p.deletes) && updates == len(p.updates) && gates == len(p.gatesReady) {
		return
	}
	// A surge create may take the slot a surge-ending delete of the same pass frees (planSurge): for each such delete
	// cut, the last surge create kept goes too, or more nodes would surge than maxSurge allows.
	kept, drop := p.creates[:creates], 0
	for _, d := range p.deletes[deletes:] {
		if d.endsSurge {
			drop++
		}
	}
	for i := len(kept) - 1; i >= 0 && drop > 0; i-- {
		if kept[i].surge {
			kept = slices.Delete(kept, i, i+1)
			drop--
		}
	}
	p.creates, p.deletes, p.updates, p.gatesReady = kept, p.deletes[:deletes], p.updates[:updates], p.gatesReady[:gates]
	deleting := map[string]bool{}
	for _, d := range p.deletes {
		if d.reason == deleteFailed || d.reason == deleteSucceeded {
			deleting[PodNode(d.pod)] = true
		}
	}
	var failed []string
	for _, n := range p.failedNodes {
		if deleting[n] {
			failed = append(failed, n)
		}
	}
	p.failedNodes = failed
	p.requeue(cutRequeue)
}

// cutRequeue is when a pass whose writes were cut comes back, should none of its writes' events bring it sooner.
const cutRequeue = time.Second

// planGates opens the in-place readiness gate of every live pod that carries it closed (or not yet set) and is not
// waiting for an update in place: a pod just created, one whose updated containers run again, and one whose update
// did not go through. Pods this plan deletes or updates are left alone.
func planGates(nodes []nodeView, p *plan) {
	acted := map[types.UID]bool{}
	for _, d := range p.deletes {
		acted[d.pod.UID] = true
	}
	for _, u := range p.updates {
		acted[u.pod.UID] = true
	}
	for _, n := range nodes {
		for _, pod := range n.pods {
			if acted[pod.UID] || isTerminal(pod) || !hasInPlaceGate(pod) || inPlaceGateStatus(pod) == corev1.ConditionTrue {
				continue
			}
			if restarted, _ := inPlaceRestarted(pod); restarted {
				p.gatesReady = append(p.gatesReady, pod)
			}
		}
	}
}

// planPods decides which pods to create, delete and update in place.
func planPods(nodes []nodeView, s strategy, updateHash, currentHash string, now time.Time) plan {
	var p plan
	targets := updateTargets(nodes, s, updateHash)
	kept := map[string][]*corev1.Pod{} // per node, the live pods the rollout step may act on

	for _, n := range nodes {
		if !n.shouldContinueRunning {
			for _, pod := range n.pods {
				p.deletes = append(p.deletes, podDelete{pod: pod, reason: deleteMisscheduled})
			}
			continue
		}
		var live []*corev1.Pod
		waitingFailed := false
		for _, pod := range n.pods {
			if !isTerminal(pod) {
				live = append(live, pod)
				continue
			}
			// A Succeeded daemon pod is as finished as a Failed one (restartPolicy Always never lets it get
			// there by itself: an eviction or a node shutdown did): both are replaced, after the same backoff.
			if n.backoff > 0 {
				// Keep the terminal pod until its backoff ends, so the node gets no new pod yet and the
				// controller does not create and delete pods in a hot loop.
				waitingFailed = true
				p.requeue(n.backoff)
				continue
			}
			reason := deleteFailed
			if pod.Status.Phase == corev1.PodSucceeded {
				reason = deleteSucceeded
			}
			p.deletes = append(p.deletes, podDelete{pod: pod, reason: reason})
			p.failedNodes = append(p.failedNodes, n.name)
		}
		if len(live) == 0 {
			if n.shouldRun && n.terminating == 0 && !waitingFailed && !deletingFailed(p, n.name) {
				hash := updateHash
				switch {
				case s.newPodsAt != "":
					hash = s.newPodsAt
				case !s.onDelete && !targets[n.name] && currentHash != "":
					hash = currentHash
				}
				p.creates = append(p.creates, podCreate{node: n.name, hash: hash})
			}
			continue
		}
		live = dedupe(live, updateHash, s, now, &p)
		kept[n.name] = live
	}

	if s.onDelete || s.paused {
		// No rollout step, but a pod turning available later must still be counted then (numberAvailable).
		requeueForAvailability(nodes, s, now, &p)
		return p
	}
	broken := brokenByUpdate(nodes, updateHash, currentHash, s, now)
	if s.maxSurge > 0 {
		planSurge(nodes, kept, targets, s, updateHash, broken, now, &p)
	} else {
		planReplace(nodes, kept, targets, s, updateHash, broken, now, &p)
	}
	return p
}

// deletingFailed reports whether the plan already deletes a failed pod on node: the replacement comes after the
// deletion is observed, never in the same pass.
func deletingFailed(p plan, node string) bool {
	for _, n := range p.failedNodes {
		if n == node {
			return true
		}
	}
	return false
}

// dedupe keeps at most one pod per node, or with surge one old and one new, and plans the deletion of the rest:
// it keeps the pod of the update revision over others, an available pod over one that is not, a ready pod over an
// unready one, and the oldest otherwise. Without surge (maxSurge 0, OnDelete, or a host port) an available pod
// comes first of all: a node holding an old available pod and an unavailable new one (left by a surge since turned
// off, or by a switch to OnDelete) keeps the old one, so that dropping a duplicate never costs availability outside
// the maxUnavailable budget; the rollout then replaces the old pod like any other.
func dedupe(live []*corev1.Pod, updateHash string, s strategy, now time.Time, p *plan) []*corev1.Pod {
	if len(live) == 1 {
		return live
	}
	surge := s.maxSurge > 0 && !s.onDelete
	sort.SliceStable(live, func(i, j int) bool {
		a, b := live[i], live[j]
		availableA, _ := availability(a, s.minReadySeconds, now)
		availableB, _ := availability(b, s.minReadySeconds, now)
		if !surge && availableA != availableB {
			return availableA
		}
		if ua, ub := a.Labels[RevisionLabel] == updateHash, b.Labels[RevisionLabel] == updateHash; ua != ub {
			return ua
		}
		if availableA != availableB {
			return availableA
		}
		if ra, rb := isReady(a), isReady(b); ra != rb {
			return ra
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	// keep gets its own array: appending to a slice of live would overwrite rest, which shares live's.
	keep := []*corev1.Pod{live[0]}
	rest := live[1:]
	if surge && live[0].Labels[RevisionLabel] == updateHash {
		// A surge pair: the new pod plus the best old one, until the new pod is available.
		for i, pod := range rest {
			if pod.Labels[RevisionLabel] != updateHash {
				keep = append(keep, pod)
				rest = append(append([]*corev1.Pod(nil), rest[:i]...), rest[i+1:]...)
				break
			}
		}
	}
	for _, pod := range rest {
		p.deletes = append(p.deletes, podDelete{pod: pod, reason: deleteDuplicate})
	}
	return keep
}

// requeueForAvailability asks for a pass when the next pod that is ready, but not yet for minReadySeconds, becomes
// available: no event marks that moment.
func requeueForAvailability(nodes []nodeView, s strategy, now time.Time, p *plan) {
	for _, n := range nodes {
		for _, pod := range n.pods {
			_, wait := availability(pod, s.minReadySeconds, now)
			p.requeue(wait)
		}
	}
}

// countUnavailable counts the nodes that should run the pod, are up, and have no available pod, and the nodes the
// update may have brought down (broken): a node down since before the rollout reached it never uses up the budget,
// one that went down after its pod was updated does.
func countUnavailable(nodes []nodeView, kept map[string][]*corev1.Pod, s strategy, updateHash string, broken map[string]bool,
	now time.Time, p *plan) int {
	n := len(broken)
	for _, node := range nodes {
		// A node that admits no new pod counts while its pod is updated in place, or is to be: that pod is out of service
		// too, and a pass that updates an unavailable one there must not spend the budget elsewhere as if it were not.
		inPlaceOnly := admitsNoNewPod(node) && s.inPlace && node.canary &&
			slices.ContainsFunc(kept[node.name], func(p *corev1.Pod) bool {
				return p.Labels[RevisionLabel] == updateHash || updatableInPlaceOnly(node, p, s)
			})
		if (!node.shouldRun && !inPlaceOnly) || node.down {
			continue
		}
		available := false
		for _, pod := range kept[node.name] {
			ok, wait := availability(pod, s.minReadySeconds, now)
			available = available || ok
			p.requeue(wait)
		}
		if !available {
			n++
		}
	}
	return n
}

// planReplace is the rolling update without surge: delete old pods (the unavailable ones first, as they cost
// nothing) while no more than maxUnavailable nodes are without an available pod; the next pass creates their
// replacements. A pod whose revision can be updated in place is patched instead of deleted, within the same
// budget: it is unavailable until its containers run again.
func planReplace(nodes []nodeView, kept map[string][]*corev1.Pod, targets map[string]bool, s strategy, updateHash string,
	broken map[string]bool, now time.Time, p *plan) {
	unavailable := countUnavailable(nodes, kept, s, updateHash, broken, now, p)
	keepIfRefused := map[types.UID]bool{} // pods on nodes that admit no new pod: nothing would replace them
	defer func() {
		for i := range p.updates {
			p.updates[i].keepIfRefused = keepIfRefused[p.updates[i].pod.UID]
		}
	}()
	var candidates []*corev1.Pod
	for _, n := range nodes {
		pods := kept[n.name]
		if n.down || len(pods) != 1 || pods[0].Labels[RevisionLabel] == updateHash {
			continue
		}
		if !targets[n.name] && !updatableInPlaceOnly(n, pods[0], s) {
			continue
		}
		if !targets[n.name] {
			keepIfRefused[pods[0].UID] = true
		}
		if ok, _ := availability(pods[0], s.minReadySeconds, now); !ok {
			replace(pods[0], s, updateHash, p)
			continue
		}
		candidates = append(candidates, pods[0])
	}
	for _, pod := range candidates {
		if unavailable >= s.maxUnavailable {
			break
		}
		replace(pod, s, updateHash, p)
		unavailable++
	}
}

// admitsNoNewPod reports whether the node runs the DaemonSet's pod but would not admit a new one: an untolerated
// NoSchedule taint came after the pod. The pod stays (apps/v1 keeps it too); a new pod in its place would never be
// scheduled, so the node's daemon would be gone.
func admitsNoNewPod(n nodeView) bool { return !n.shouldRun && n.shouldContinueRunning }

// updatableInPlaceOnly reports whether pod, on a node that admits no new pod, can still move to the update revision:
// only in place (nothing is scheduled), and only on a node the canary selector picks. Such a node is not among the
// eligible nodes the partition counts.
func updatableInPlaceOnly(n nodeView, pod *corev1.Pod, s strategy) bool {
	return admitsNoNewPod(n) && n.canary && s.partition <= 0 && s.inPlace && s.inPlaceFrom[pod.Labels[RevisionLabel]]
}

// replace plans an old pod's move to the update revision: a patch when its revision can be updated in place, else
// its deletion (a later pass creates the new pod).
func replace(pod *corev1.Pod, s strategy, updateHash string, p *plan) {
	if s.inPlace && s.inPlaceFrom[pod.Labels[RevisionLabel]] {
		p.updates = append(p.updates, podUpdate{pod: pod, hash: updateHash})
		return
	}
	p.deletes = append(p.deletes, podDelete{pod: pod, reason: deleteUpdate})
}

// planSurge is the rolling update with surge: start a new pod beside the old one on up to maxSurge nodes at a time,
// and delete the old pod once the new one is available. An old pod that is not available anyway is replaced
// without surging: deleting it costs no availability.
func planSurge(nodes []nodeView, kept map[string][]*corev1.Pod, targets map[string]bool, s strategy, updateHash string,
	broken map[string]bool, now time.Time, p *plan) {
	countUnavailable(nodes, kept, s, updateHash, broken, now, p) // for its requeue: surge itself never lowers availability
	// Nodes that went down after their pod was updated stop new surges once they fill maxUnavailable (at least one):
	// the update revision may be what brings nodes down, and a surge would take it to the next node.
	surging := 0
	if len(broken) >= max(s.maxUnavailable, 1) {
		surging = s.maxSurge // every surge slot taken: no new pod beside an old one
	}
	for _, n := range nodes {
		if len(kept[n.name]) == 2 {
			surging++
		}
	}
	for _, n := range nodes {
		pods := kept[n.name]
		if !targets[n.name] || n.down || len(pods) == 0 {
			continue
		}
		var oldPod, newPod *corev1.Pod
		for _, pod := range pods {
			if pod.Labels[RevisionLabel] == updateHash {
				newPod = pod
			} else {
				oldPod = pod
			}
		}
		switch {
		case oldPod == nil:
			// Up to date.
		case newPod != nil:
			if ok, _ := availability(newPod, s.minReadySeconds, now); ok {
				p.deletes = append(p.deletes, podDelete{pod: oldPod, reason: deleteUpdate, endsSurge: true})
				surging-- // this node's surge ends now; its slot goes to the next node
			}
		default:
			oldAvailable, _ := availability(oldPod, s.minReadySeconds, now)
			switch {
			case !oldAvailable:
				p.deletes = append(p.deletes, podDelete{pod: oldPod, reason: deleteUpdate})
			case surging < s.maxSurge:
				p.creates = append(p.creates, podCreate{node: n.name, hash: updateHash, surge: true})
				surging++
			}
		}
	}
}

// brokenByUpdate are the nodes the update revision may have brought down: while a rollout is under way (the
// update revision is not the current one), a node that is down, may keep its pod (the node lifecycle controller's
// not-ready and unreachable taints are NoSchedule: the pod stays), and runs a pod of the update revision that had
// started there, with no available pod. A node that was down before the rollout reached it runs an old pod, or an
// update pod that never started (a down node's kubelet starts nothing), and is passed over; so is every down node
// once the rollout is done.
func brokenByUpdate(nodes []nodeView, updateHash, currentHash string, s strategy, now time.Time) map[string]bool {
	out := map[string]bool{}
	if updateHash == currentHash {
		return out
	}
	for _, n := range nodes {
		if !n.down || (!n.shouldRun && !n.shouldContinueRunning) {
			continue
		}
		started, available := false, false
		for _, pod := range n.pods {
			ok, _ := availability(pod, s.minReadySeconds, now)
			available = available || ok
			started = started || (pod.Labels[RevisionLabel] == updateHash && pod.Status.StartTime != nil)
		}
		if started && !available {
			out[n.name] = true
		}
	}
	return out
}

// isTerminal reports whether the pod's containers have all stopped for good.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}
