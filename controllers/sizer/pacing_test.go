package sizer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

func TestStatusUrgent(t *testing.T) {
	sized := []metav1.Condition{{Type: sizerv1alpha1.ConditionSized, Status: metav1.ConditionTrue, Reason: sizerv1alpha1.ReasonApplied}}
	rolling := sizerv1alpha1.WorkloadSizerStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 1, PodCount: 3,
		Selector: "app=a", Conditions: sized}
	moved := rolling
	moved.PodCount = 2
	settled := moved
	settled.ReadyReplicas = 2
	newGen := moved
	newGen.ObservedGeneration = 2
	unsized := moved
	unsized.Conditions = []metav1.Condition{{Type: sizerv1alpha1.ConditionSized, Status: metav1.ConditionFalse, Reason: sizerv1alpha1.ReasonConflict}}
	budget := moved
	budget.DisruptionBudget = &sizerv1alpha1.DisruptionBudgetStatus{Name: "a"}
	for name, tc := range map[string]struct {
		old, updated sizerv1alpha1.WorkloadSizerStatus
		want         bool
	}{
		"only counts moving":      {rolling, moved, false},
		"counts reaching the end": {moved, settled, false},
		"new generation observed": {moved, newGen, true},
		"a condition flips":       {moved, unsized, true},
		"a budget appears":        {moved, budget, true},
	} {
		if got := statusUrgent(tc.old, tc.updated); got != tc.want {
			t.Errorf("%s: urgent = %v, want %v", name, got, tc.want)
		}
	}
}
