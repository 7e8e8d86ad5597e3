package sizer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// Event reasons: what a user must notice, each recorded once when it starts.
const (
	EventTargetCreated   = "TargetCreated"
	EventConflict        = "Conflict"
	EventInPlaceFallback = "FellBackToRolling"
	EventBudgetRefused   = "BudgetRefused"
	EventApplyFailed     = "ApplyFailed"
	// EventInfeasiblePodEvicted is recorded for each pod evicted because its in-place resize cannot fit its node.
	EventInfeasiblePodEvicted = "InfeasiblePodEvicted"
)

// sizerEvent is one event to record.
type sizerEvent struct {
	eventType, reason, action, note string
}

// transitionEvents derives the events of a pass from the status before and after it: a conflict that starts or
// changes its reason, a fallback to a rolling update, a budget refused because it would block drains, a failed
// apply. Events follow transitions only, so a steady state records nothing.
func transitionEvents(old, updated sizerv1alpha1.WorkloadSizerStatus, createdTarget bool, target string) []sizerEvent {
	var out []sizerEvent
	if createdTarget {
		out = append(out, sizerEvent{corev1.EventTypeNormal, EventTargetCreated, "Create", "Created " + target})
	}
	started := func(t, reason string) *metav1.Condition {
		c := meta.FindStatusCondition(updated.Conditions, t)
		if c == nil || c.Reason != reason {
			return nil
		}
		if before := meta.FindStatusCondition(old.Conditions, t); before != nil && before.Reason == reason && before.Status == c.Status {
			return nil
		}
		return c
	}
	if c := meta.FindStatusCondition(updated.Conditions, sizerv1alpha1.ConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
		if c := started(sizerv1alpha1.ConditionConflict, c.Reason); c != nil {
			out = append(out, sizerEvent{corev1.EventTypeWarning, EventConflict, c.Reason, c.Message})
		}
	}
	if c := started(sizerv1alpha1.ConditionSized, sizerv1alpha1.ReasonInPlaceFallback); c != nil {
		out = append(out, sizerEvent{corev1.EventTypeWarning, EventInPlaceFallback, "Resize", c.Message})
	}
	if c := started(sizerv1alpha1.ConditionSized, sizerv1alpha1.ReasonApplyFailed); c != nil {
		out = append(out, sizerEvent{corev1.EventTypeWarning, EventApplyFailed, "Apply", c.Message})
	}
	if c := started(sizerv1alpha1.ConditionBudgetSafe, sizerv1alpha1.ReasonBudgetWouldBlock); c != nil {
		out = append(out, sizerEvent{corev1.EventTypeWarning, EventBudgetRefused, "Budget", c.Message})
	}
	return out
}

// recordEvents records a pass's events on the sizer and returns them. The counters of conflicts and fallbacks
// follow the events (so a metric and `kubectl events` tell the same story), but the caller counts them only once
// the pass's status is written (countEvents).
func (r *Reconciler) recordEvents(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, old, updated sizerv1alpha1.WorkloadSizerStatus, createdTarget bool) []sizerEvent {
	ref := wls.Target()
	events := transitionEvents(old, updated, createdTarget, ref.Kind+" "+ref.Name)
	evs := make([]recorder.Event, 0, len(events))
	for _, e := range events {
		evs = append(evs, recorder.Event{Type: e.eventType, Reason: e.reason, Action: e.action, Note: e.note})
	}
	recorder.Record(ctx, r.Recorder, recorder.Subject(wls), evs...)
	return events
}
