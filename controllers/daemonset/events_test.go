package daemonset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// Event messages carry no counts, so that the passes of one rollout repeat the same message.
func TestEventSummaries(t *testing.T) {
	if got := deletedKinds([]string{deleteUpdate, deleteUpdate, deleteFailed}); got != "failed and outdated" {
		t.Errorf("deletedKinds = %q", got)
	}
	if got := distinct([]string{"c", "a", "b", "a"}); got != "a, b and c" {
		t.Errorf("distinct = %q", got)
	}
	if got := distinct([]string{"5d8f9c7b6", "5d8f9c7b6"}); got != "5d8f9c7b6" {
		t.Errorf("distinct of one revision = %q", got)
	}
}

func TestRolloutTransitionOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	status := func(progressing string, ready metav1.ConditionStatus, readySince time.Duration) daemonsetv1alpha1.DaemonSetStatus {
		st := daemonsetv1alpha1.DaemonSetStatus{UpdateRevision: "abc", UpdatedNumberScheduled: 3}
		if progressing != "" {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: daemonsetv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
				Reason: progressing, Message: progressing + " on n1"})
		}
		st.Conditions = append(st.Conditions, metav1.Condition{Type: daemonsetv1alpha1.ConditionReady, Status: ready, LastTransitionTime: at(readySince)})
		return st
	}
	for name, tc := range map[string]struct {
		before, after daemonsetv1alpha1.DaemonSetStatus
		want          rolloutTransition
	}{
		"a rollout completes": {status(daemonsetv1alpha1.ReasonRollingUpdate, metav1.ConditionFalse, 90*time.Second), status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionTrue, 0),
			rolloutTransition{completed: true, took: 90 * time.Second, message: "Rollout of revision abc complete on 3 nodes"}},
		"a stuck rollout completes": {status(daemonsetv1alpha1.ReasonRolloutStuck, metav1.ConditionFalse, time.Hour), status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionTrue, 0),
			rolloutTransition{completed: true, took: time.Hour, message: "Rollout of revision abc complete on 3 nodes"}},
		"steady state": {status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionTrue, time.Hour), status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionTrue, time.Hour),
			rolloutTransition{}},
		"still rolling": {status(daemonsetv1alpha1.ReasonRollingUpdate, metav1.ConditionFalse, time.Minute), status(daemonsetv1alpha1.ReasonRollingUpdate, metav1.ConditionFalse, time.Minute),
			rolloutTransition{}},
		// Complete but not Ready (a node went down meanwhile): not done yet.
		"complete, not ready": {status(daemonsetv1alpha1.ReasonRollingUpdate, metav1.ConditionFalse, time.Minute), status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionFalse, time.Minute),
			rolloutTransition{}},
		// The first status ever written has nothing to compare with: no rollout is seen to finish.
		"first status": {daemonsetv1alpha1.DaemonSetStatus{}, status(daemonsetv1alpha1.ReasonComplete, metav1.ConditionTrue, 0), rolloutTransition{}},
		"becomes stuck": {status(daemonsetv1alpha1.ReasonRollingUpdate, metav1.ConditionFalse, time.Minute), status(daemonsetv1alpha1.ReasonRolloutStuck, metav1.ConditionFalse, time.Minute),
			rolloutTransition{stuck: true, message: "RolloutStuck on n1"}},
		"stays stuck": {status(daemonsetv1alpha1.ReasonRolloutStuck, metav1.ConditionFalse, time.Minute), status(daemonsetv1alpha1.ReasonRolloutStuck, metav1.ConditionFalse, time.Minute),
			rolloutTransition{}},
	} {
		if got := rolloutTransitionOf(tc.before, tc.after, now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}
