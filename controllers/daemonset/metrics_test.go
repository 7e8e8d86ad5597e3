package daemonset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/metrics"
)

// A DaemonSet is at fault, by name, when its rollout is stuck or its failure policy stopped it; a rollout that goes
// on, or one the user paused, is not.
func TestFaultsNameTheDaemonSet(t *testing.T) {
	progressing := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: daemonsetv1alpha1.ConditionProgressing, Status: status, Reason: reason}}
	}
	for name, tc := range map[string]struct {
		status daemonsetv1alpha1.DaemonSetStatus
		want   []metrics.Fault
	}{
		"rolling":      {status: daemonsetv1alpha1.DaemonSetStatus{Conditions: progressing(metav1.ConditionTrue, daemonsetv1alpha1.ReasonRollingUpdate)}},
		"user paused":  {status: daemonsetv1alpha1.DaemonSetStatus{Conditions: progressing(metav1.ConditionFalse, daemonsetv1alpha1.ReasonPaused)}},
		"stuck":        {status: daemonsetv1alpha1.DaemonSetStatus{Conditions: progressing(metav1.ConditionFalse, daemonsetv1alpha1.ReasonRolloutStuck)}, want: []metrics.Fault{{Reason: "RolloutStuck", Value: 1}}},
		"rolled back":  {status: daemonsetv1alpha1.DaemonSetStatus{Conditions: progressing(metav1.ConditionFalse, daemonsetv1alpha1.ReasonRolledBack), RolloutFailure: &daemonsetv1alpha1.RolloutFailure{Action: daemonsetv1alpha1.RolloutFailureRollback}}, want: []metrics.Fault{{Reason: "RolloutFailed", Value: 1}}},
		"policy pause": {status: daemonsetv1alpha1.DaemonSetStatus{Conditions: progressing(metav1.ConditionFalse, daemonsetv1alpha1.ReasonPaused), RolloutFailure: &daemonsetv1alpha1.RolloutFailure{}}, want: []metrics.Fault{{Reason: "RolloutFailed", Value: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			ds := daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "agent"}, Status: tc.status}
			key, got := faults(ds)
			if key.String() != "team-a/agent" {
				t.Errorf("named %s", key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
