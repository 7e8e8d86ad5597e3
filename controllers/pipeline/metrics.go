package pipeline

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/metrics"
)

// stepTimeToReady is observed once per step that becomes Ready, by the pass whose status write says so.
var stepTimeToReady = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    metrics.Name(metrics.KindPipeline, "step_time_to_ready_seconds"),
	Help:    "How long pipeline steps took to become Ready: from a step's creation, or from it leaving Ready (a new spec, a lost pod), until it is Ready again.",
	Buckets: metrics.DurationBuckets,
})

func init() {
	crmetrics.Registry.MustRegister(stepTimeToReady)
}

// stepPhases are the phases a step can be in, each reported (as 0 when no step is in it).
var stepPhases = []string{string(inferencev1alpha1.PhasePending), string(inferencev1alpha1.PhaseProgressing),
	string(inferencev1alpha1.PhaseReady), string(inferencev1alpha1.PhaseDegraded), string(inferencev1alpha1.PhaseFailed),
	string(inferencev1alpha1.PhaseDeleting)}

// stateKind reads the Pipelines' state metrics off the cache: conditions, and their steps by phase.
func stateKind(list func(context.Context) ([]inferencev1alpha1.Pipeline, error)) metrics.Kind[inferencev1alpha1.Pipeline] {
	return metrics.Kind[inferencev1alpha1.Pipeline]{
		Name:       metrics.KindPipeline,
		List:       list,
		Conditions: func(p inferencev1alpha1.Pipeline) []metav1.Condition { return p.Status.Conditions },
		Gauges: []metrics.Gauge[inferencev1alpha1.Pipeline]{{
			Name: "steps", Help: "Steps of every pipeline, by phase.", Label: metrics.LabelPhase, Known: stepPhases,
			Values: func(p inferencev1alpha1.Pipeline) map[string]float64 {
				out := map[string]float64{}
				for _, s := range p.Status.Steps {
					out[string(s.Phase)]++
				}
				return out
			},
		}},
		Faults: faults,
	}
}

// faults is what is wrong with a Pipeline, for the alerts that name it: its Failed and Degraded steps, counted.
func faults(p inferencev1alpha1.Pipeline) (types.NamespacedName, []metrics.Fault) {
	var out []metrics.Fault
	for _, s := range p.Status.Steps {
		if s.Phase == inferencev1alpha1.PhaseFailed || s.Phase == inferencev1alpha1.PhaseDegraded {
			out = append(out, metrics.Fault{Reason: string(s.Phase), Value: 1})
		}
	}
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, out
}

// RegisterMetrics registers the Pipelines' state metrics, read from mgr's cache on the leader, with
// controller-runtime's registry. Call it once per process (the binary's main does).
func RegisterMetrics(mgr ctrl.Manager) error {
	list := func(ctx context.Context) ([]inferencev1alpha1.Pipeline, error) {
		var l inferencev1alpha1.PipelineList
		if err := mgr.GetCache().List(ctx, &l); err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return crmetrics.Registry.Register(metrics.NewCollector(stateKind(list), metrics.Leading(mgr)))
}

// stepChanges are the steps whose readiness a status write changed.
type stepChanges struct {
	// started: steps that have just appeared not Ready, or have just left Ready: their clock starts.
	started []string
	// readied: steps that are Ready now and were not.
	readied []string
	// stopped: steps whose clock stops without a measure (gone from the status, or being deleted).
	stopped []string
}

// stepChangesOf compares the steps of the status before a write with those written.
func stepChangesOf(old, cur []inferencev1alpha1.StepStatus) stepChanges {
	var c stepChanges
	was := map[string]inferencev1alpha1.Phase{}
	for _, s := range old {
		was[s.Name] = s.Phase
	}
	for _, s := range cur {
		before, existed := was[s.Name]
		delete(was, s.Name)
		switch {
		case s.Phase == inferencev1alpha1.PhaseDeleting:
			c.stopped = append(c.stopped, s.Name)
		case s.Phase == inferencev1alpha1.PhaseReady && before != inferencev1alpha1.PhaseReady:
			c.readied = append(c.readied, s.Name)
		case s.Phase != inferencev1alpha1.PhaseReady && (!existed || before == inferencev1alpha1.PhaseReady):
			c.started = append(c.started, s.Name)
		}
	}
	for name := range was {
		c.stopped = append(c.stopped, name)
	}
	return c
}

// stepClockTTL is how long a step's clock may run before it is dropped unmeasured: a pipeline deleted while a step
// was starting never writes that step Ready, and its clock must not stay in memory for good.
const stepClockTTL = 24 * time.Hour

// stepClock remembers, in this process, since when each step has not been Ready. A step whose start this process
// did not see (it left Ready under the previous leader) is not measured: a guess would skew the histogram.
type stepClock struct {
	mu        sync.Mutex
	since     map[string]time.Time // <pipeline UID>/<step>
	lastSweep time.Time
}

// steps is the process's clock, as process-wide as the histogram it feeds.
var steps = &stepClock{since: map[string]time.Time{}}

// observe applies a written status's step changes at now and returns how long each readied step took.
func (c *stepClock) observe(uid types.UID, ch stepChanges, now time.Time) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := func(step string) string { return string(uid) + "/" + step }
	for _, s := range ch.started {
		if _, ok := c.since[key(s)]; !ok {
			c.since[key(s)] = now
		}
	}
	for _, s := range ch.stopped {
		delete(c.since, key(s))
	}
	var took []time.Duration
	for _, s := range ch.readied {
		if t, ok := c.since[key(s)]; ok {
			took = append(took, max(now.Sub(t), 0))
			delete(c.since, key(s))
		}
	}
	if now.Sub(c.lastSweep) > time.Hour {
		c.lastSweep = now
		for k, t := range c.since {
			if now.Sub(t) > stepClockTTL {
				delete(c.since, k)
			}
		}
	}
	return took
}

// forget drops every clock of a pipeline.
func (c *stepClock) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.since {
		if strings.HasPrefix(k, string(uid)+"/") {
			delete(c.since, k)
		}
	}
}

// measureSteps observes the time to ready of each step a written status shows Ready anew.
func measureSteps(p *inferencev1alpha1.Pipeline, old, cur inferencev1alpha1.PipelineStatus, now time.Time) {
	if p.DeletionTimestamp != nil {
		steps.forget(p.UID)
		return
	}
	for _, d := range steps.observe(p.UID, stepChangesOf(old.Steps, cur.Steps), now) {
		stepTimeToReady.Observe(d.Seconds())
	}
}
