package metrics

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// listTimeout bounds a scrape's read of the cache: the cache answers from memory, so only an informer that is not
// synced yet makes it wait, and a scrape must not hang on that.
const listTimeout = 5 * time.Second

// Kind says how the state metrics of one kind are read off its objects.
type Kind[T any] struct {
	// Name is the kind as metric names spell it (KindDaemonSet, ...).
	Name string
	// List reads every object of the kind, from the informer cache.
	List func(ctx context.Context) ([]T, error)
	// Conditions returns an object's status conditions.
	Conditions func(T) []metav1.Condition
	// Gauges are the kind's other state gauges, each summed over the objects.
	Gauges []Gauge[T]
	// Faults returns what is wrong with an object, for keelson_<kind>_fault: reported by the object's namespace and
	// name, so that an alert names the object at fault and can be routed by its namespace. Nil for a kind without.
	Faults func(T) (types.NamespacedName, []Fault)
}

// Fault is one thing wrong with one object: keelson_<kind>_fault{object_namespace, object_name, reason}. Only
// objects at fault are reported, so the series stay as few as the objects that need a person.
type Fault struct {
	// Reason says what is wrong, in one CamelCase word (a condition's reason, a step's phase).
	Reason string
	// Value is 1, or how many of the object's parts are at fault (a pipeline's failing steps).
	Value float64
}

// Gauge is a state gauge summed over a kind's objects: keelson_<kind>_<Name>, with at most one label.
type Gauge[T any] struct {
	// Name is the <what> of the metric's name.
	Name string
	// Help is the metric's description.
	Help string
	// Label names the one label, or is empty for a gauge without labels.
	Label string
	// Known are label values reported as 0 when no object has them, so a dashboard shows a line at zero rather
	// than no data, and an alert on a value's rise has a series to start from.
	Known []string
	// Values returns an object's contribution by label value ("" without a label).
	Values func(T) map[string]float64
}

// ConditionKey is one (type, status, reason) of a condition.
type ConditionKey struct {
	Type, Status, Reason string
}

// CountConditions counts the objects whose conditions hold each (type, status, reason).
func CountConditions(conditions [][]metav1.Condition) map[ConditionKey]int {
	out := map[ConditionKey]int{}
	for _, cs := range conditions {
		for _, c := range cs {
			out[ConditionKey{Type: c.Type, Status: string(c.Status), Reason: c.Reason}]++
		}
	}
	return out
}

// Sum adds up a gauge over objects, with every known label value present (and, without a label, the one value,
// 0 for no objects).
func Sum[T any](g Gauge[T], objs []T) map[string]float64 {
	out := map[string]float64{}
	if g.Label == "" {
		out[""] = 0
	}
	for _, v := range g.Known {
		out[v] = 0
	}
	for _, o := range objs {
		for k, v := range g.Values(o) {
			out[k] += v
		}
	}
	return out
}

// Collector reports a kind's state metrics at scrape time, from the cache, on the leader only.
type Collector[T any] struct {
	kind       Kind[T]
	leading    func() bool
	conditions *prometheus.Desc
	gauges     []*prometheus.Desc
	faults     *prometheus.Desc
}

var _ prometheus.Collector = &Collector[any]{}

// NewCollector returns the collector of kind's state metrics; leading reports whether this process leads (see
// Leading). keelson_<kind>_condition{condition,status,reason} counts the objects in each condition.
func NewCollector[T any](kind Kind[T], leading func() bool) *Collector[T] {
	c := &Collector[T]{kind: kind, leading: leading,
		conditions: prometheus.NewDesc(Name(kind.Name, "condition"),
			"Number of "+kind.Name+" objects whose status condition of this type has this status and reason (reported by the leader).",
			[]string{LabelCondition, LabelStatus, LabelReason}, nil)}
	for _, g := range kind.Gauges {
		var labels []string
		if g.Label != "" {
			labels = []string{g.Label}
		}
		c.gauges = append(c.gauges, prometheus.NewDesc(Name(kind.Name, g.Name), g.Help, labels, nil))
	}
	if kind.Faults != nil {
		c.faults = prometheus.NewDesc(Name(kind.Name, "fault"),
			"What is wrong with a "+kind.Name+" object, by its namespace and name: 1 for each reason (or the number of its "+
				"parts at fault), reported by the leader for the objects at fault only.",
			[]string{LabelObjectNamespace, LabelObjectName, LabelReason}, nil)
	}
	return c
}

// Describe sends the descriptions of every metric the collector reports.
func (c *Collector[T]) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conditions
	for _, d := range c.gauges {
		ch <- d
	}
	if c.faults != nil {
		ch <- c.faults
	}
}

// Collect reads the objects and reports their state. A follower, or a read that fails, reports nothing: no number
// beats a wrong one, and the scrape of every other metric goes on.
func (c *Collector[T]) Collect(ch chan<- prometheus.Metric) {
	if !c.leading() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	objs, err := c.kind.List(ctx)
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Reading objects for the state metrics", "kind", c.kind.Name)
		return
	}
	conds := make([][]metav1.Condition, 0, len(objs))
	for _, o := range objs {
		conds = append(conds, c.kind.Conditions(o))
	}
	counts := CountConditions(conds)
	keys := make([]ConditionKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Status != b.Status {
			return a.Status < b.Status
		}
		return a.Reason < b.Reason
	})
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(c.conditions, prometheus.GaugeValue, float64(counts[k]), k.Type, k.Status, k.Reason)
	}
	for i, g := range c.kind.Gauges {
		for label, v := range Sum(g, objs) {
			var values []string
			if g.Label != "" {
				values = []string{label}
			}
			ch <- prometheus.MustNewConstMetric(c.gauges[i], prometheus.GaugeValue, v, values...)
		}
	}
	if c.faults == nil {
		return
	}
	for _, o := range objs {
		key, faults := c.kind.Faults(o)
		for _, f := range SumFaults(faults) {
			ch <- prometheus.MustNewConstMetric(c.faults, prometheus.GaugeValue, f.Value, key.Namespace, key.Name, f.Reason)
		}
	}
}

// SumFaults adds up an object's faults by reason, in the order the reasons first appear: a metric may not hold two
// series with the same labels.
func SumFaults(faults []Fault) []Fault {
	var out []Fault
	at := map[string]int{}
	for _, f := range faults {
		if i, ok := at[f.Reason]; ok {
			out[i].Value += f.Value
			continue
		}
		at[f.Reason] = len(out)
		out = append(out, f)
	}
	return out
}

// Elector is what Leading needs of a manager.
type Elector interface {
	// Elected is closed once this process leads (at once without leader election).
	Elected() <-chan struct{}
}

// Leading reports, each time it is called, whether mgr's process leads.
func Leading(mgr Elector) func() bool {
	elected := mgr.Elected()
	return func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
}
