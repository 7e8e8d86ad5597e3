package daemonset

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/conditions"
	"github.com/keelson-dev/keelson/controllers/internal/poddiagnosis"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// maxListed is how many nodes a condition message names before it says "and N more".
const maxListed = 5

// waitingProblems are container waiting reasons that will not clear by themselves.
var waitingProblems = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// podProblem says why a pod will not become available on its own, or "" when it may still.
func podProblem(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodFailed {
		return "pod " + pod.Name + " failed"
	}
	if message, ok := poddiagnosis.Unschedulable(pod); ok {
		return fmt.Sprintf("pod %s is unschedulable: %s", pod.Name, message)
	}
	if container, w := poddiagnosis.Waiting(pod, waitingProblems); w != nil {
		return fmt.Sprintf("pod %s container %s: %s", pod.Name, container, w.Reason)
	}
	return ""
}

// listNodes renders "a, b, c and 2 more" from notes keyed by node name, sorted, so messages are stable and a status
// that has not changed is not rewritten.
func listNodes(notes map[string]string) string {
	names := slices.Sorted(maps.Keys(notes))
	var parts []string
	for _, n := range names[:min(len(names), maxListed)] {
		if notes[n] == "" {
			parts = append(parts, n)
		} else {
			parts = append(parts, n+" ("+notes[n]+")")
		}
	}
	out := strings.Join(parts, ", ")
	if len(names) > maxListed {
		out += fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return out
}

// statusInput is everything status needs beyond the node views.
type statusInput struct {
	generation     int64
	updateHash     string
	currentHash    string
	collisionCount *int32
	strategy       strategy
	now            time.Time
}

// computeStatus derives the DaemonSet's status from the nodes and their pods. old supplies the conditions, so a
// condition that did not change keeps its lastTransitionTime.
func computeStatus(old daemonsetv1alpha1.DaemonSetStatus, nodes []nodeView, in statusInput) daemonsetv1alpha1.DaemonSetStatus {
	st := daemonsetv1alpha1.DaemonSetStatus{
		ObservedGeneration: in.generation,
		UpdateRevision:     in.updateHash,
		CurrentRevision:    in.currentHash,
		CollisionCount:     in.collisionCount,
		StableRevision:     old.StableRevision,
		Conditions:         append([]metav1.Condition(nil), old.Conditions...),
	}
	targets := updateTargets(nodes, in.strategy, in.updateHash)
	unavailable := map[string]string{} // up nodes without an available pod, with what is wrong
	stuck := map[string]string{}       // target nodes whose update-revision pod will not become available by itself
	kept := map[string]string{}        // nodes that admit no new pod and keep an old one, which no pass will update
	pendingTargets, heldBack := 0, 0
	for _, n := range nodes {
		if !n.shouldRun {
			if len(n.pods) > 0 {
				st.NumberMisscheduled++
			}
			switch keptOld(n, in) {
			case keptPending:
				pendingTargets++
			case keptForGood:
				kept[n.name] = ""
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(n.pods) > 0 {
			st.CurrentNumberScheduled++
		}
		ns := stateOf(n, in)
		if ns.ready {
			st.NumberReady++
		}
		if ns.available {
			st.NumberAvailable++
		} else if !n.down {
			unavailable[n.name] = ns.problem
			if ns.problem == "" && len(n.pods) == 0 {
				unavailable[n.name] = "no pod"
			}
		}
		if ns.updated {
			st.UpdatedNumberScheduled++
		}
		switch {
		case !targets[n.name] && !ns.updated:
			heldBack++
		case targets[n.name] && !ns.updatedAvailable:
			pendingTargets++
			if ns.hasUpdatePod && ns.problem != "" && !n.down {
				stuck[n.name] = ns.problem
			}
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	// A node down since before the rollout reached it is passed over; one the update may have brought down counts,
	// as the planner counts it against maxUnavailable (brokenByUpdate).
	for name := range brokenByUpdate(nodes, in.updateHash, in.currentHash, in.strategy, in.now) {
		unavailable[name] = "the node went down after its pod was updated"
		stuck[name] = unavailable[name]
	}

	setAvailable(&st, unavailable, in)
	setProgressing(&st, stuck, pendingTargets, heldBack, in)
	if len(kept) > 0 && pendingTargets == 0 && !in.strategy.onDelete {
		setKeptOld(&st, kept, in)
	}
	setReady(&st, unavailable, pendingTargets)
	return st
}

// nodeState is what the pods of a node that should run the pod say for the status. updatedAvailable, not
// available, says whether the node is done: with surge an old pod keeps the node available while the new one starts
// (or fails) beside it, and that must not look like a finished update. A node is updated once every pod on it is of
// the update revision: with surge, a node whose new pod starts beside the old one is not yet (apps/v1 counts a node
// by its oldest pod, which is the old one), or tools that wait for updatedNumberScheduled and numberAvailable to
// reach desiredNumberScheduled would call a rollout done while old pods serve every node. problem is what keeps its
// update-revision pod from becoming available, or the failure backoff its replacement waits for.
type nodeState struct {
	ready, available, updated, updatedAvailable, hasUpdatePod bool
	problem                                                   string
}

// stateOf reads a node that should run the pod.
func stateOf(n nodeView, in statusInput) nodeState {
	s := nodeState{updated: len(n.pods) > 0}
	for _, pod := range n.pods {
		s.ready = s.ready || isReady(pod)
		ok, _ := availability(pod, in.strategy.minReadySeconds, in.now)
		s.available = s.available || ok
		if pod.Labels[RevisionLabel] != in.updateHash {
			s.updated = false
		} else {
			s.hasUpdatePod = true
			s.updatedAvailable = s.updatedAvailable || ok
			if !ok && s.problem == "" {
				s.problem = podProblem(pod)
			}
		}
	}
	if n.backoff > 0 {
		// No countdown in the message: status changes only when facts do, not every pass.
		s.problem = "a pod failed; its replacement waits for the failure backoff"
	}
	return s
}

func setAvailable(st *daemonsetv1alpha1.DaemonSetStatus, unavailable map[string]string, in statusInput) {
	c := metav1.Condition{Type: daemonsetv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: daemonsetv1alpha1.ReasonMinimumAvailable,
		ObservedGeneration: in.generation,
		Message:            fmt.Sprintf("%d of %d nodes run an available pod", st.NumberAvailable, st.DesiredNumberScheduled)}
	if len(unavailable) > in.strategy.maxUnavailable {
		c.Status, c.Reason = metav1.ConditionFalse, daemonsetv1alpha1.ReasonTooManyUnavailable
		c.Message = fmt.Sprintf("%d nodes have no available pod, more than maxUnavailable %d allows: %s",
			len(unavailable), in.strategy.maxUnavailable, listNodes(unavailable))
	}
	conditions.Set(&st.Conditions, c)
}

func setProgressing(st *daemonsetv1alpha1.DaemonSetStatus, stuck map[string]string, pending, heldBack int, in statusInput) {
	c := metav1.Condition{Type: daemonsetv1alpha1.ConditionProgressing, ObservedGeneration: in.generation}
	held := ""
	if heldBack > 0 {
		held = fmt.Sprintf("; %d nodes held back by the partition or canary selector", heldBack)
	}
	switch {
	case pending == 0:
		c.Status, c.Reason = metav1.ConditionTrue, daemonsetv1alpha1.ReasonComplete
		c.Message = fmt.Sprintf("%d of %d nodes run the update revision %s%s",
			st.UpdatedNumberScheduled, st.DesiredNumberScheduled, in.updateHash, held)
	case in.strategy.onDelete:
		c.Status, c.Reason = metav1.ConditionTrue, daemonsetv1alpha1.ReasonOnDelete
		c.Message = fmt.Sprintf("%d of %d nodes run the update revision; delete the old pods to update the others",
			st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case in.strategy.paused:
		c.Status, c.Reason = metav1.ConditionUnknown, daemonsetv1alpha1.ReasonPaused
		c.Message = fmt.Sprintf("rollout paused with %d of %d nodes on the update revision; set "+
			"spec.updateStrategy.rollingUpdate.paused to false to go on", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case len(stuck) >= budget(in.strategy):
		// Broken pods of the update revision use up the whole budget: the planner cannot replace another pod.
		c.Status, c.Reason = metav1.ConditionFalse, daemonsetv1alpha1.ReasonRolloutStuck
		c.Message = fmt.Sprintf("rollout cannot go on: %d nodes wait for pods that will not become available "+
			"by themselves: %s", len(stuck), listNodes(stuck))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, daemonsetv1alpha1.ReasonRollingUpdate
		c.Message = fmt.Sprintf("%d of %d nodes run the update revision %s%s",
			st.UpdatedNumberScheduled, st.DesiredNumberScheduled, in.updateHash, held)
	}
	conditions.Set(&st.Conditions, c)
}

// How a node that admits no new pod stands in a rollout (see admitsNoNewPod).
const (
	keptNone    = iota // no pod, or its pods are of the update revision and available
	keptPending        // its pod is being, or will be, updated in place
	keptForGood        // its pod is of an old revision and cannot be updated in place
)

// keptOld says how a node that admits no new pod stands in the rollout: its old pod can move to the update revision
// in place only (updatableInPlaceOnly); otherwise it stays on its old revision until someone acts.
func keptOld(n nodeView, in statusInput) int {
	if !admitsNoNewPod(n) || len(n.pods) == 0 || n.down || !n.canary {
		return keptNone // a down node is passed over (its taint is the node lifecycle's); the canary holds the others
	}
	for _, pod := range n.pods {
		if pod.Labels[RevisionLabel] == in.updateHash {
			continue
		}
		if updatableInPlaceOnly(n, pod, in.strategy) && !in.strategy.paused {
			return keptPending
		}
		return keptForGood
	}
	for _, pod := range n.pods {
		if ok, _ := availability(pod, in.strategy.minReadySeconds, in.now); !ok && !n.down {
			return keptPending // updated in place, its containers not running again yet
		}
	}
	return keptNone
}

// setKeptOld says, on a rollout otherwise done, that some nodes keep a pod of an old revision because they admit no
// new pod: the rollout is not complete, and no pass will complete it.
func setKeptOld(st *daemonsetv1alpha1.DaemonSetStatus, kept map[string]string, in statusInput) {
	conditions.Set(&st.Conditions, metav1.Condition{Type: daemonsetv1alpha1.ConditionProgressing,
		Status: metav1.ConditionFalse, Reason: daemonsetv1alpha1.ReasonOldPodsKept, ObservedGeneration: in.generation,
		Message: conditions.Message(fmt.Sprintf("%d nodes keep a pod of an old revision: an untolerated NoSchedule taint "+
			"came after the pod, so a new pod would not be scheduled there and the old one is not deleted: %s; tolerate "+
			"the taint, set spec.updateStrategy.rollingUpdate.inPlace to IfPossible (an image change is then made in "+
			"place), or delete the pods to leave those nodes without one", len(kept), listNodes(kept)))})
}

// budget is how many nodes may be mid-update at once: maxSurge when surging, else maxUnavailable.
func budget(s strategy) int {
	if s.maxSurge > 0 {
		return s.maxSurge
	}
	return max(s.maxUnavailable, 1)
}

func setReady(st *daemonsetv1alpha1.DaemonSetStatus, unavailable map[string]string, pendingTargets int) {
	c := metav1.Condition{Type: daemonsetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: daemonsetv1alpha1.ReasonAllNodesUpdated,
		ObservedGeneration: st.ObservedGeneration,
		Message: fmt.Sprintf("all %d nodes run an available pod; every node the rollout may update runs the update revision",
			st.DesiredNumberScheduled)}
	switch {
	case st.NumberAvailable < st.DesiredNumberScheduled:
		c.Status, c.Reason = metav1.ConditionFalse, daemonsetv1alpha1.ReasonNodesUnavailable
		c.Message = fmt.Sprintf("%d of %d nodes run an available pod", st.NumberAvailable, st.DesiredNumberScheduled)
		if len(unavailable) > 0 {
			c.Message += "; waiting for " + listNodes(unavailable)
		}
	case pendingTargets > 0:
		c.Status, c.Reason = metav1.ConditionFalse, daemonsetv1alpha1.ReasonUpdatePending
		c.Message = fmt.Sprintf("%d nodes still wait for an available pod of the update revision", pendingTargets)
	}
	conditions.Set(&st.Conditions, c)
}

// selectorMismatch says why the DaemonSet's selector does not select the pods its template makes, or "" when it
// does: such a DaemonSet would never see the pods it creates as its own.
func selectorMismatch(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec) string {
	sel := EffectiveSelector(ds)
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Sprintf("spec.selector is invalid: %v", err)
	}
	if !selector.Matches(labels.Set(template.Labels)) {
		return fmt.Sprintf("spec.selector %s does not select spec.template.metadata.labels %v", selector, template.Labels)
	}
	// The pods carry the controller's own labels over the template's (podLabels), and a revision hash that changes
	// with every template: the selector must select them as they are, at any revision.
	for _, hash := range []string{"a", "b"} {
		if l := podLabels(ds, template, hash); !selector.Matches(labels.Set(l)) {
			return fmt.Sprintf("spec.selector %s does not select the labels the controller gives every pod (%s=%s, %s "+
				"and %s=%s, %s for the revision)", selector, daemonsetv1alpha1.NameLabel, ds.Name, commonlabels.ManagedBy, commonlabels.PartOf,
				commonlabels.Keelson, RevisionLabel)
		}
	}
	return ""
}

// markSelectorMismatch turns Ready and Progressing false with the mismatch: the controller creates no pod for it.
func markSelectorMismatch(st *daemonsetv1alpha1.DaemonSetStatus, mismatch string) {
	for _, t := range []string{daemonsetv1alpha1.ConditionReady, daemonsetv1alpha1.ConditionProgressing} {
		conditions.Set(&st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse,
			Reason: daemonsetv1alpha1.ReasonSelectorMismatch, ObservedGeneration: st.ObservedGeneration,
			Message: conditions.Message(mismatch + "; no pod is created until they match")})
	}
}

// keepTransitionTimes gives each condition that ends a pass with the status it had before the pass the
// lastTransitionTime it had then: a condition set and then overridden within one pass (Complete, then OldPodsKept or
// a failure policy's RolledBack) would otherwise carry a new time on every pass, and the status would be written on
// every pass though nothing changed.
func keepTransitionTimes(conds, before []metav1.Condition) {
	for i := range conds {
		if old := meta.FindStatusCondition(before, conds[i].Type); old != nil && old.Status == conds[i].Status {
			conds[i].LastTransitionTime = old.LastTransitionTime
		}
	}
}
