package daemonset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

func TestStatusUrgent(t *testing.T) {
	ready := func(s metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: s, Reason: reason, Message: msg}}
	}
	moving := daemonsetv1alpha1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 100, NumberAvailable: 10,
		UpdatedNumberScheduled: 10, NumberUnavailable: 90, Conditions: ready("False", "Progressing", "10 of 100 available")}
	more := moving
	more.NumberAvailable, more.UpdatedNumberScheduled, more.NumberUnavailable = 20, 20, 80
	more.Conditions = ready("False", "Progressing", "20 of 100 available")
	done := more
	done.NumberAvailable, done.UpdatedNumberScheduled, done.NumberUnavailable = 100, 100, 0
	done.Conditions = ready("False", "Progressing", "100 of 100 available")
	newGen := more
	newGen.ObservedGeneration = 2
	flipped := more
	flipped.Conditions = ready("True", "Progressing", "20 of 100 available")
	for name, tc := range map[string]struct {
		old, updated daemonsetv1alpha1.DaemonSetStatus
		want         bool
	}{
		"counters and message moving":   {moving, more, false},
		"settled":                       {more, done, true},
		"new generation observed":       {more, newGen, true},
		"a condition changes status":    {more, flipped, true},
		"a condition appears":           {daemonsetv1alpha1.DaemonSetStatus{ObservedGeneration: 1}, moving, true},
		"an empty DaemonSet is settled": {daemonsetv1alpha1.DaemonSetStatus{}, daemonsetv1alpha1.DaemonSetStatus{}, true},
	} {
		if got := statusUrgent(tc.old, tc.updated); got != tc.want {
			t.Errorf("%s: urgent = %v, want %v", name, got, tc.want)
		}
	}
}

// Counter-only status writes of a large DaemonSet are spaced by its size, so that a rollout spends about the same
// number of writes on them at any size; a small one keeps its one-second counters.
func TestStatusIntervalFollowsTheDaemonSetsSize(t *testing.T) {
	for desired, want := range map[int32]time.Duration{
		0: time.Second, 20: time.Second, 2000: time.Second, 5000: 2500 * time.Millisecond,
		10000: 5 * time.Second, 20000: 10 * time.Second, 100000: 10 * time.Second,
	} {
		if got := statusIntervalFor(desired); got != want {
			t.Errorf("%d desired pods: %v, want %v", desired, got, want)
		}
	}
}
