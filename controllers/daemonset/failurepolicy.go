package daemonset

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/conditions"
)

// defaultProgressDeadline is how long a pod of a new revision may take to become ready when the failure policy
// does not say.
const defaultProgressDeadline = 600 * time.Second

// failureInput is what the failure policy decides from, beyond the node views.
type failureInput struct {
	policy      *daemonsetv1alpha1.RolloutFailurePolicy
	generation  int64
	updateHash  string
	currentHash string
	// stableHash is the last revision that ran available everywhere ("" when none has yet).
	stableHash string
	// recorded is the failure the status holds (nil when none).
	recorded *daemonsetv1alpha1.RolloutFailure
	// known are the revisions whose templates are recorded: a rollback needs its target's template.
	known    map[string]*corev1.PodTemplateSpec
	strategy strategy
	now      time.Time
}

// failureDecision is what the failure policy makes of a pass.
type failureDecision struct {
	// failure is the failure that holds (nil when the rollout goes on as its strategy says); declared says it is
	// new in this pass (an event tells of it).
	failure  *daemonsetv1alpha1.RolloutFailure
	declared bool
	// recheck is when a pod of the update revision reaches its progress deadline (0 for none): no event marks it.
	recheck time.Duration
}

// settleTime is how long every pod of a revision must have been ready, without interruption, on every eligible node
// before it becomes the stable revision: the failure policy's progress deadline, and at least minReadySeconds. A
// container without a readiness probe that crashes a moment after it starts is ready for that moment; a revision
// called stable then would leave a rollback nothing to go back to.
func settleTime(ds *daemonsetv1alpha1.DaemonSet) time.Duration {
	settle := time.Duration(ds.Spec.MinReadySeconds) * time.Second
	if p := failurePolicy(ds); p != nil {
		settle = max(settle, progressDeadline(p))
	}
	return settle
}

// settled says whether updateHash is now the stable revision: every eligible node runs only pods of it, every one
// ready for settle, and no node keeps an older pod. Under constant node churn a node that joined within the settle
// time can never have a pod ready for all of it: its pod need only be ready, with no problem and no container
// restarted (a crash-looping container is ready between its restarts, and a pass comes each time it turns ready),
// once at least one pod of the revision has been ready for the whole settle time on a node older than the settle time
// (the revision proved itself there; a young node's clock cannot prove it). When it is not yet settled only because
// pods have not been ready for long enough, wait says when to look again.
func settled(nodes []nodeView, updateHash string, settle time.Duration, now time.Time) (ok bool, wait time.Duration) {
	desired, proven := 0, 0
	var newNodesWait time.Duration // how long until the first pod on a new node proves the revision
	for _, n := range nodes {
		if !n.shouldRun || n.down {
			continue // a down node, or one that admits no new pod, does not hold the revision back
		}
		desired++
		if len(n.pods) == 0 {
			return false, 0
		}
		for _, pod := range n.pods {
			if pod.Labels[RevisionLabel] != updateHash {
				return false, 0
			}
			available, w := availability(pod, int32(settle/time.Second), now)
			young := now.Sub(n.joined) < settle
			switch {
			case available && !young:
				proven++
			case available:
				// ready for the whole settle time on a young node: it holds nothing back, and proves nothing either
			case w == 0:
				return false, 0 // not ready
			case young && podProblem(pod) == "" && !hasRestarts(pod):
				newNodesWait = minPositive(newNodesWait, w)
			case young:
				return false, 0 // briefly ready between restarts proves nothing
			default:
				wait = max(wait, w)
			}
		}
	}
	if proven == 0 && wait == 0 {
		wait = newNodesWait
	}
	return desired > 0 && wait == 0, wait
}

// hasRestarts reports whether any of pod's containers has restarted.
func hasRestarts(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.RestartCount > 0 {
			return true
		}
	}
	return false
}

// minPositive is the smaller of a and b, a zero counting as none.
func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// progressDeadline is the policy's progressDeadlineSeconds, or its default.
func progressDeadline(p *daemonsetv1alpha1.RolloutFailurePolicy) time.Duration {
	if s := ptr.Deref(p.ProgressDeadlineSeconds, 0); s > 0 {
		return time.Duration(s) * time.Second
	}
	return defaultProgressDeadline
}

// failurePolicy is ds's rolling update failure policy (nil with none, or under OnDelete).
func failurePolicy(ds *daemonsetv1alpha1.DaemonSet) *daemonsetv1alpha1.RolloutFailurePolicy {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type == daemonsetv1alpha1.OnDeleteStrategyType || ru == nil {
		return nil
	}
	return ru.FailurePolicy
}

// decideFailure applies the failure policy. A failure recorded for the same revision under the same policy holds (a
// new template or a changed policy lifts it); else, while a rollout is under way (the update revision is neither the one pods ran
// before nor the last stable one), more failed nodes than maxFailedNodes declare one: Pause, or Rollback to the
// stable revision (to the revision the rollout started from when none is recorded; a pause when neither is known).
func decideFailure(nodes []nodeView, in failureInput) failureDecision {
	if in.policy == nil || in.policy.Action == "" || in.policy.Action == daemonsetv1alpha1.RolloutFailureContinue {
		return failureDecision{}
	}
	if r := in.recorded; r != nil && r.Revision == in.updateHash && equality.Semantic.DeepEqual(r.Policy, *in.policy) {
		return failureDecision{failure: r}
	}
	if in.updateHash == in.stableHash {
		return failureDecision{} // back at the stable revision: nothing newer to judge, nothing to go back to
	}
	target := rollbackTarget(in)
	if in.currentHash == in.updateHash && target == "" {
		return failureDecision{} // nothing rolls out: a DaemonSet's first revision, or one already everywhere
	}
	failed, recheck := updateFailures(nodes, in.updateHash, in.currentHash, in.strategy, progressDeadline(in.policy), in.now)
	desired := 0
	for _, n := range nodes {
		if n.shouldRun || (n.shouldContinueRunning && len(n.pods) > 0) { // a down node is tainted, and still counts
			desired++
		}
	}
	allowed := 0
	if in.policy.MaxFailedNodes != nil {
		allowed, _ = intstr.GetScaledValueFromIntOrPercent(in.policy.MaxFailedNodes, desired, false)
	}
	if len(failed) <= allowed {
		return failureDecision{recheck: recheck}
	}
	f := &daemonsetv1alpha1.RolloutFailure{Revision: in.updateHash, Action: daemonsetv1alpha1.RolloutFailurePause,
		Generation: in.generation, Policy: *in.policy.DeepCopy(), FailedNodes: int32(len(failed)),
		Time: metav1.NewTime(in.now.UTC().Truncate(time.Second)),
		Message: conditions.Message(fmt.Sprintf("pods of revision %s failed on %d nodes, more than maxFailedNodes %d allows: %s",
			in.updateHash, len(failed), allowed, listNodes(failed)))}
	if in.policy.Action == daemonsetv1alpha1.RolloutFailureRollback {
		if target != "" {
			f.Action, f.RolledBackTo = daemonsetv1alpha1.RolloutFailureRollback, target
		} else {
			f.Message += "; paused instead of rolled back: no earlier revision ran on every node"
		}
	}
	return failureDecision{failure: f, declared: true}
}

// rollbackTarget is the revision a rollback goes to: the stable revision, else the one the rollout started from;
// "" when neither differs from the update revision with its template recorded.
func rollbackTarget(in failureInput) string {
	for _, h := range []string{in.stableHash, in.currentHash} {
		if h != "" && h != in.updateHash && in.known[h] != nil {
			return h
		}
	}
	return ""
}

// updateFailures names the nodes whose pod of the update revision failed, with why: a problem that will not clear by
// itself (podProblem), not ready past the deadline from its creation or update in place, or its node went down
// after it started there (brokenByUpdate). A node with an available pod of the update revision has not failed.
// recheck is when the next pod not yet ready reaches the deadline.
func updateFailures(nodes []nodeView, updateHash, currentHash string, s strategy, deadline time.Duration,
	now time.Time) (map[string]string, time.Duration) {
	failed := map[string]string{}
	var recheck time.Duration
	for _, n := range nodes {
		if n.down {
			continue // brokenByUpdate below tells which down nodes the update may have brought down
		}
		why := ""
		for _, pod := range n.pods {
			if pod.Labels[RevisionLabel] != updateHash {
				continue
			}
			if ok, _ := availability(pod, s.minReadySeconds, now); ok {
				why = ""
				break
			}
			if problem := podProblem(pod); problem != "" {
				why = problem
				continue
			}
			if isReady(pod) {
				continue // ready, not yet for minReadySeconds
			}
			if age := now.Sub(notReadySince(pod)); age >= deadline {
				why = fmt.Sprintf("pod %s not ready %s after it started", pod.Name, deadline)
			} else if wait := deadline - age; recheck == 0 || wait < recheck {
				recheck = wait
			}
		}
		if why != "" {
			failed[n.name] = why
		}
	}
	for name := range brokenByUpdate(nodes, updateHash, currentHash, s, now) {
		failed[name] = "the node went down after its pod was updated"
	}
	return failed, recheck
}

// notReadySince is when pod's wait to become ready began: its update, or, for a pod ready since then that is not
// now, when it stopped being ready (a readiness probe missed once does not count from the update two hours ago).
func notReadySince(pod *corev1.Pod) time.Time {
	since := updateStarted(pod)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	return since
}

// underFailure turns the strategy and revisions a pass plans with under a failure: a pause stops updating nodes and
// gives new pods the revision the pause keeps (the stable one, else the one the rollout started from); a rollback
// makes its target the update revision, and pods of the failed one are replaced as old pods are (in place where the
// strategy allows it).
func underFailure(f *daemonsetv1alpha1.RolloutFailure, s strategy, updateHash, currentHash, stableHash string,
	templates map[string]*corev1.PodTemplateSpec) (strategy, string, string) {
	if f == nil {
		return s, updateHash, currentHash
	}
	if f.Action == daemonsetv1alpha1.RolloutFailureRollback && templates[f.RolledBackTo] != nil {
		target := f.RolledBackTo
		if currentHash == updateHash {
			currentHash = target
		}
		s.rollingBackFrom = updateHash
		if s.inPlace {
			s.inPlaceFrom = inPlaceFrom(templates, target)
		}
		return s, target, currentHash
	}
	s.paused = true
	for _, h := range []string{stableHash, currentHash} {
		if h != "" && h != updateHash && templates[h] != nil {
			s.newPodsAt = h
			break
		}
	}
	return s, updateHash, currentHash
}

// markFailure sets the conditions of a status computed under a failure: Progressing False, with the failure and what
// to do; Ready False while a rollback holds (the spec's template is not what runs). A rollback the user's pause holds
// (userPaused: spec.updateStrategy.rollingUpdate.paused, with nodes left to roll back) says it waits, not that it is
// done: a pause stops every replacement, the rollback's too.
func markFailure(st *daemonsetv1alpha1.DaemonSetStatus, f *daemonsetv1alpha1.RolloutFailure, userPaused bool) {
	st.RolloutFailure = f.DeepCopy()
	reason, message := daemonsetv1alpha1.ReasonPaused, fmt.Sprintf("rollout paused by its failure policy: %s; "+
		"apply a fixed template (a new revision rolls out), or change the failure policy to try revision %s again",
		f.Message, f.Revision)
	switch {
	case f.Action == daemonsetv1alpha1.RolloutFailureRollback && userPaused:
		reason, message = daemonsetv1alpha1.ReasonPaused, fmt.Sprintf("the rollback to revision %s waits: the rollout is "+
			"paused (spec.updateStrategy.rollingUpdate.paused), with %d of %d nodes rolled back; set paused to false to "+
			"roll back the others. The failure: %s", f.RolledBackTo, st.UpdatedNumberScheduled, st.DesiredNumberScheduled, f.Message)
	case f.Action == daemonsetv1alpha1.RolloutFailureRollback:
		reason, message = daemonsetv1alpha1.ReasonRolledBack, fmt.Sprintf("rolled back to revision %s by the failure "+
			"policy: %s; apply a fixed template (a new revision rolls out), or change the failure policy to try "+
			"revision %s again", f.RolledBackTo, f.Message, f.Revision)
	}
	conditions.Set(&st.Conditions, metav1.Condition{Type: daemonsetv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
		Reason: reason, ObservedGeneration: st.ObservedGeneration, Message: conditions.Message(message)})
	if f.Action == daemonsetv1alpha1.RolloutFailureRollback {
		conditions.Set(&st.Conditions, metav1.Condition{Type: daemonsetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, ObservedGeneration: st.ObservedGeneration, Message: conditions.Message(message)})
	}
}
