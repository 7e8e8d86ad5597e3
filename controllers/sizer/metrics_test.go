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

	anotherBefore := testutil.ToFloat64(conflicts.WithLabelValues(sizerv1alpha1.ReasonAnotherSizer))
	autoscalerBefore := testutil.ToFloat64(conflicts.WithLabelValues(sizerv1alpha1.ReasonAutoscaler))
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
	for name, got := range map[string]float64{sizerv1alpha1.ReasonAnotherSizer: testutil.ToFloat64(conflicts.WithLabelValues(sizerv1alpha1.ReasonAnotherSizer)) - anotherBefore, sizerv1alpha1.ReasonAutoscaler: testutil.ToFloat64(conflicts.WithLabelValues(sizerv1alpha1.ReasonAutoscaler)) - autoscalerBefore, "fallbacks": testutil.ToFloat64(inPlaceFallbacks) - fallbacksBefore} {
		if got != 1 {
			t.Errorf("%s counted %v times, want once", name, got)
		}
	}
}
