package daemonset

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/metrics"
)

// rolloutDuration is observed once per completed rollout, by the pass whose status write completes it.
var rolloutDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    metrics.Name(metrics.KindDaemonSet, "rollout_duration_seconds"),
	Help:    "How long DaemonSets were not Ready before a rollout completed (a new template, or new nodes, until every node runs an available pod of it).",
	Buckets: metrics.DurationBuckets,
})

func init() {
	crmetrics.Registry.MustRegister(rolloutDuration)
}

// stateKind reads the DaemonSets' state metrics off the cache: conditions, and the nodes desired, updated and
// available summed over every DaemonSet (updated / desired is the fleet's rollout progress).
func stateKind(list func(context.Context) ([]daemonsetv1alpha1.DaemonSet, error)) metrics.Kind[daemonsetv1alpha1.DaemonSet] {
	one := func(f func(*daemonsetv1alpha1.DaemonSetStatus) int32) func(daemonsetv1alpha1.DaemonSet) map[string]float64 {
		return func(ds daemonsetv1alpha1.DaemonSet) map[string]float64 {
			return map[string]float64{"": float64(f(&ds.Status))}
		}
	}
	return metrics.Kind[daemonsetv1alpha1.DaemonSet]{
		Name:       metrics.KindDaemonSet,
		List:       list,
		Conditions: func(ds daemonsetv1alpha1.DaemonSet) []metav1.Condition { return ds.Status.Conditions },
		Gauges: []metrics.Gauge[daemonsetv1alpha1.DaemonSet]{
			{Name: "desired_nodes", Help: "Nodes that should run a DaemonSet's pod, summed over DaemonSets.",
				Values: one(func(s *daemonsetv1alpha1.DaemonSetStatus) int32 { return s.DesiredNumberScheduled })},
			{Name: "updated_nodes", Help: "Nodes that run a pod of their DaemonSet's update revision, summed over DaemonSets.",
				Values: one(func(s *daemonsetv1alpha1.DaemonSetStatus) int32 { return s.UpdatedNumberScheduled })},
			{Name: "available_nodes", Help: "Nodes that run an available pod of their DaemonSet, summed over DaemonSets.",
				Values: one(func(s *daemonsetv1alpha1.DaemonSetStatus) int32 { return s.NumberAvailable })},
		},
		Faults: faults,
	}
}

// Fault reasons of keelson_daemonset_fault.
const (
	// faultRolloutStuck: the rollout cannot go on (Progressing False, RolloutStuck).
	faultRolloutStuck = daemonsetv1alpha1.ReasonRolloutStuck
	// faultRolloutFailed: the failure policy stopped the rollout, paused or rolled back (status.rolloutFailure).
	faultRolloutFailed = "RolloutFailed"
)

// faults is what is wrong with a DaemonSet, for the alerts that name it.
func faults(ds daemonsetv1alpha1.DaemonSet) (types.NamespacedName, []metrics.Fault) {
	var out []metrics.Fault
	if c := meta.FindStatusCondition(ds.Status.Conditions, daemonsetv1alpha1.ConditionProgressing); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == daemonsetv1alpha1.ReasonRolloutStuck {
		out = append(out, metrics.Fault{Reason: faultRolloutStuck, Value: 1})
	}
	if ds.Status.RolloutFailure != nil {
		out = append(out, metrics.Fault{Reason: faultRolloutFailed, Value: 1})
	}
	return types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}, out
}

// RegisterMetrics registers the DaemonSets' state metrics, read from mgr's cache on the leader, with
// controller-runtime's registry. Call it once per process (the binary's main does).
func RegisterMetrics(mgr ctrl.Manager) error {
	list := func(ctx context.Context) ([]daemonsetv1alpha1.DaemonSet, error) {
		var l daemonsetv1alpha1.DaemonSetList
		if err := mgr.GetCache().List(ctx, &l); err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return crmetrics.Registry.Register(metrics.NewCollector(stateKind(list), metrics.Leading(mgr)))
}
