package sizer

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// The counters rise when a conflict or a fallback starts, not on each pass that still sees it.
func TestConflictAndFallbackCountersFollowTheEvents(t *testing.T) {
	status := func(conds ...metav1.Condition) sizerv1alpha1.WorkloadSizerStatus {
		return sizerv1alpha1.WorkloadSizerStatus{Conditions: conds}
	}
	noConflict := metav1.Condition{Type: sizerv1alpha1.ConditionConflict, Status: metav1.ConditionFalse, Reason: sizerv1alpha1.ReasonNoConflict}
	another := metav1.Condition{Type: sizerv1alpha1.ConditionConflict, Status: metav1.ConditionTrue, Reason: sizerv1alpha1.ReasonAnotherSizer, Message: "older sizer"}
	autoscaler := metav1.Condition{Type: sizerv1alpha1.ConditionConflict, Status: metav1.ConditionTrue, Reason: sizerv1alpha1.ReasonAutoscaler, Message: "an HPA"}
	applied := metav1.Condition{Type: sizerv1alpha1.ConditionSized, Status: metav1.ConditionTrue, Reason: sizerv1alpha1.ReasonApplied}
	fellBack := metav1.Condition{Type: sizerv1alpha1.ConditionSized, Status: metav1.ConditionTrue, Reason: sizerv1alpha1.ReasonInPlaceFallback, Message: "limits"}

	anotherBefore := testutil.ToFloat64(conflictsTotal.WithLabelValues(sizerv1alpha1.ReasonAnotherSizer))
	autoscalerBefore := testutil.ToFloat64(conflictsTotal.WithLabelValues(sizerv1alpha1.ReasonAutoscaler))
	fallbacksBefore := testutil.ToFloat64(inPlaceFallbacks)
	for _, pass := range []struct {
		old, updated sizerv1alpha1.WorkloadSizerStatus
	}{
		{status(noConflict, applied), status(another, fellBack)},    // both start
		{status(another, fellBack), status(another, fellBack)},      // both go on: nothing new
		{status(another, fellBack), status(autoscaler, fellBack)},   // the conflict changes its reason
		{status(autoscaler, fellBack), status(noConflict, applied)}, // both end
	} {
		countEvents(transitionEvents(pass.old, pass.updated, false, "Deployment web"))
	}
	for name, got := range map[string]float64{sizerv1alpha1.ReasonAnotherSizer: testutil.ToFloat64(conflictsTotal.WithLabelValues(sizerv1alpha1.ReasonAnotherSizer)) - anotherBefore, sizerv1alpha1.ReasonAutoscaler: testutil.ToFloat64(conflictsTotal.WithLabelValues(sizerv1alpha1.ReasonAutoscaler)) - autoscalerBefore, "fallbacks": testutil.ToFloat64(inPlaceFallbacks) - fallbacksBefore} {
		if got != 1 {
			t.Errorf("%s counted %v times, want once", name, got)
		}
	}
}

// A sizer is at fault, by name, while it is in Conflict, with the conflict's reason.
func TestFaultsNameTheSizerInConflict(t *testing.T) {
	w := sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "api"}}
	if _, got := faults(w); len(got) != 0 {
		t.Fatalf("a sizer without conditions at fault: %v", got)
	}
	w.Status.Conditions = []metav1.Condition{{Type: sizerv1alpha1.ConditionConflict, Status: metav1.ConditionFalse, Reason: sizerv1alpha1.ReasonNoConflict}}
	if _, got := faults(w); len(got) != 0 {
		t.Fatalf("a sizer without conflict at fault: %v", got)
	}
	w.Status.Conditions[0].Status, w.Status.Conditions[0].Reason = metav1.ConditionTrue, sizerv1alpha1.ReasonAnotherSizer
	key, got := faults(w)
	if key.String() != "team-a/api" || len(got) != 1 || got[0].Reason != sizerv1alpha1.ReasonAnotherSizer || got[0].Value != 1 {
		t.Fatalf("got %s %v, want team-a/api AnotherSizer", key, got)
	}
}
