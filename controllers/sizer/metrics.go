package sizer

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/metrics"
)

// The sizer's event counters: each counts the events of one reason (events.go), so they rise when a conflict or a
// fallback starts, not on every pass that still sees it.
var (
	conflictsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metrics.Name(metrics.KindWorkloadSizer, "conflicts_total"),
		Help: "Conflicts that started: a WorkloadSizer left a field or object alone because someone else owns it, by the Conflict condition's reason.",
	}, []string{metrics.LabelReason})
	inPlaceFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metrics.Name(metrics.KindWorkloadSizer, "inplace_fallbacks_total"),
		Help: "Resizes that could not be done in place and fell back to a rolling update.",
	})
)

// conflictReasons are the Conflict condition's reasons, counted from zero so that a rate over them has a start.
var conflictReasons = []string{sizerv1alpha1.ReasonConflict, sizerv1alpha1.ReasonObjectNotOwned, sizerv1alpha1.ReasonBudgetOverlap, sizerv1alpha1.ReasonAnotherSizer, sizerv1alpha1.ReasonTakenBack, sizerv1alpha1.ReasonAutoscaler, sizerv1alpha1.ReasonTargetControlled,
	sizerv1alpha1.ReasonAutoscalerWithoutSize, sizerv1alpha1.ReasonVerticalAutoscaler}

func init() {
	crmetrics.Registry.MustRegister(conflictsTotal, inPlaceFallbacks)
	for _, r := range conflictReasons {
		conflictsTotal.WithLabelValues(r)
	}
}

// countEvents counts a pass's conflict and fallback events.
func countEvents(events []sizerEvent) {
	for _, e := range events {
		switch e.reason {
		case EventConflict:
			conflictsTotal.WithLabelValues(e.action).Inc() // a conflict event's action is the condition's reason
		case EventInPlaceFallback:
			inPlaceFallbacks.Inc()
		}
	}
}

// stateKind reads the WorkloadSizers' state metrics off the cache: their conditions.
func stateKind(list func(context.Context) ([]sizerv1alpha1.WorkloadSizer, error)) metrics.Kind[sizerv1alpha1.WorkloadSizer] {
	return metrics.Kind[sizerv1alpha1.WorkloadSizer]{
		Name:       metrics.KindWorkloadSizer,
		List:       list,
		Conditions: func(w sizerv1alpha1.WorkloadSizer) []metav1.Condition { return w.Status.Conditions },
		Faults:     faults,
	}
}

// faults is what is wrong with a WorkloadSizer, for the alerts that name it: a Conflict, by its reason.
func faults(w sizerv1alpha1.WorkloadSizer) (types.NamespacedName, []metrics.Fault) {
	var out []metrics.Fault
	if c := meta.FindStatusCondition(w.Status.Conditions, sizerv1alpha1.ConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
		out = append(out, metrics.Fault{Reason: c.Reason, Value: 1})
	}
	return types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, out
}

// RegisterMetrics registers the WorkloadSizers' state metrics, read from mgr's cache on the leader, with
// controller-runtime's registry. Call it once per process (the binary's main does).
func RegisterMetrics(mgr ctrl.Manager) error {
	list := func(ctx context.Context) ([]sizerv1alpha1.WorkloadSizer, error) {
		var l sizerv1alpha1.WorkloadSizerList
		if err := mgr.GetCache().List(ctx, &l); err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return crmetrics.Registry.Register(metrics.NewCollector(stateKind(list), metrics.Leading(mgr)))
}
