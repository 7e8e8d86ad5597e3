package metrics

// Prefix starts every Keelson metric name.
const Prefix = "keelson"

// Name is a metric's full name: keelson_<kind>_<what>.
func Name(kind, what string) string {
	return Prefix + "_" + kind + "_" + what
}

// Kinds, as metric names spell them.
const (
	KindDaemonSet     = "daemonset"
	KindWorkloadSizer = "workloadsizer"
	KindPipeline      = "pipeline"
)

// Label names shared by every kind.
const (
	LabelCondition = "condition"
	LabelStatus    = "status"
	LabelReason    = "reason"
	LabelPhase     = "phase"
	// LabelObjectNamespace and LabelObjectName name the object a fault is about. Not "namespace": Prometheus's
	// target labels hold that name (the controller's own namespace), and a scrape would rename ours.
	LabelObjectNamespace = "object_namespace"
	LabelObjectName      = "object_name"
)

// DurationBuckets are the histogram buckets, in seconds, of how long something takes to converge (a rollout, a
// step becoming ready): from seconds (an image already on the node) to hours (a large model pulled and loaded, a
// rollout over a thousand nodes).
var DurationBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}
