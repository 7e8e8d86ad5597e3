package daemonset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// Event reasons: what a pass's writes did (execute.go records them), and a rollout's transitions.
const (
	eventCreated         = "SuccessfulCreate"
	eventDeleted         = "SuccessfulDelete"
	eventFailedCreate    = "FailedCreate"
	eventFailedDelete    = "FailedDelete"
	eventUpdated         = "SuccessfulUpdateInPlace"
	eventFailedUpdate    = "FailedUpdateInPlace"
	eventRolloutComplete = "RolloutComplete"
	eventRolloutStuck    = "RolloutStuck"
	eventRolloutPaused   = "RolloutPaused"
	eventRolledBack      = "RolledBack"
)

// rolloutTransition is what a status write says happened to the rollout since the status before it.
type rolloutTransition struct {
	// completed: every node the rollout may update now runs an available pod of the update revision, and the
	// DaemonSet is Ready again.
	completed bool
	// took is how long the DaemonSet was not Ready before it completed (0 when unknown): a new template, new nodes
	// or a node's pod going away take it out of Ready, so this is the time a rollout took to converge.
	took time.Duration
	// stuck: the rollout has just become stuck; message says on which nodes.
	stuck   bool
	message string
}

// rolloutTransitionOf compares the status before a write with the one written, at now. It is computed from the
// statuses alone, so whichever replica writes the transition reports it, once.
func rolloutTransitionOf(before, after daemonsetv1alpha1.DaemonSetStatus, now time.Time) rolloutTransition {
	var t rolloutTransition
	was := meta.FindStatusCondition(before.Conditions, daemonsetv1alpha1.ConditionProgressing)
	is := meta.FindStatusCondition(after.Conditions, daemonsetv1alpha1.ConditionProgressing)
	if is == nil {
		return t
	}
	wasReason := ""
	if was != nil {
		wasReason = was.Reason
	}
	if is.Reason == daemonsetv1alpha1.ReasonRolloutStuck && wasReason != daemonsetv1alpha1.ReasonRolloutStuck {
		t.stuck, t.message = true, is.Message
	}
	if is.Reason == daemonsetv1alpha1.ReasonComplete && was != nil && wasReason != daemonsetv1alpha1.ReasonComplete &&
		meta.IsStatusConditionTrue(after.Conditions, daemonsetv1alpha1.ConditionReady) {
		t.completed = true
		if r := meta.FindStatusCondition(before.Conditions, daemonsetv1alpha1.ConditionReady); r != nil && r.Status != metav1.ConditionTrue {
			t.took = max(now.Sub(r.LastTransitionTime.Time), 0)
		}
		t.message = fmt.Sprintf("Rollout of revision %s complete on %d nodes", after.UpdateRevision, after.UpdatedNumberScheduled)
	}
	return t
}

// reportRollout records the events and metrics of a written status's rollout transition.
func (r *Reconciler) reportRollout(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, before, after daemonsetv1alpha1.DaemonSetStatus, now time.Time) {
	t := rolloutTransitionOf(before, after, now)
	if t.completed && t.took > 0 {
		rolloutDuration.Observe(t.took.Seconds())
	}
	// A failure is told once, by the write that stores it, whichever replica makes it.
	if f := after.RolloutFailure; f != nil && (before.RolloutFailure == nil || before.RolloutFailure.Revision != f.Revision ||
		!before.RolloutFailure.Time.Equal(&f.Time)) {
		r.reportFailure(ctx, ds, f)
	}
	switch {
	case t.completed:
		r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeNormal, Reason: eventRolloutComplete, Action: "Rollout", Note: t.message})
	case t.stuck:
		r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventRolloutStuck, Action: "Rollout", Note: t.message})
	}
}

// reportFailure records the event of a failure the failure policy has just declared.
func (r *Reconciler) reportFailure(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, f *daemonsetv1alpha1.RolloutFailure) {
	e := recorder.Event{Type: corev1.EventTypeWarning, Reason: eventRolloutPaused, Action: "Rollout",
		Note: fmt.Sprintf("Rollout of revision %s paused: %s", f.Revision, f.Message)}
	if f.Action == daemonsetv1alpha1.RolloutFailureRollback {
		e.Reason = eventRolledBack
		e.Note = fmt.Sprintf("Rolling back from revision %s to %s: %s", f.Revision, f.RolledBackTo, f.Message)
	}
	r.record(ctx, ds, e)
}

// record records an event about ds (recorder.Record).
func (r *Reconciler) record(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, e recorder.Event) {
	recorder.Record(ctx, r.Recorder, recorder.Subject(ds), e)
}
