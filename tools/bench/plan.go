package main

import (
	"fmt"
	"time"
)

// Plan sizes one run.
type Plan struct {
	// Nodes are the simulated pool sizes the DaemonSet benchmarks run at.
	Nodes []int `json:"nodes"`
	// Reps is how many times each DaemonSet trial runs per implementation; it is even, so that each
	// implementation goes first equally often.
	Reps int `json:"reps"`
	// Idle is the steady-state window, with every controller holding objects; it should be at least as long as
	// the longest periodic requeue (see periodicRequeues), or the report names the periods it can miss.
	Idle      time.Duration `json:"idle"`
	Sizers    int           `json:"sizers"`
	Pipelines int           `json:"pipelines"`
	// PipelineReps is how many times each pipeline/bare pair is measured.
	PipelineReps int `json:"pipelineReps"`
	Unrelated    int `json:"unrelatedPods"`
	Handovers    int `json:"handovers"`
	RollingNodes int `json:"rollingNodes"`
	// ScaleNodes are the pool sizes measured once per implementation, smallest first (convergence, writes per node,
	// the controller's memory and its longest passes), to show how cost grows with nodes; none for none.
	ScaleNodes []int `json:"scaleNodes"`
}

// plans: the full run, and a quick one of a few minutes that checks the harness end to end.
var (
	fullPlan  = Plan{Nodes: []int{100, 500, 1000}, Reps: 4, Idle: 150 * time.Second, Sizers: 1000, Pipelines: 20, PipelineReps: 3, Unrelated: 10000, Handovers: 3, ScaleNodes: []int{1000, 5000, 10000}}
	quickPlan = Plan{Nodes: []int{100}, Reps: 2, Idle: 20 * time.Second, Sizers: 100, Pipelines: 4, PipelineReps: 3, Unrelated: 1000, Handovers: 1}
)

// checkPlan refuses a plan whose comparisons would favour one side: an odd number of DaemonSet repetitions lets
// one implementation go first more often, an odd number of pipeline pairs does the same for the pipeline
// comparison, and fewer than three pipeline repetitions give no spread worth reporting.
func checkPlan(p Plan) error {
	switch {
	case len(p.Nodes) == 0:
		return fmt.Errorf("the plan has no node counts")
	case p.Reps < 2 || p.Reps%2 != 0:
		return fmt.Errorf("%d DaemonSet repetitions: use an even number of at least 2, so that each implementation goes first equally often", p.Reps)
	case p.PipelineReps < 3:
		return fmt.Errorf("%d pipeline repetitions: use at least 3", p.PipelineReps)
	case p.Pipelines < 1 || (p.Pipelines*p.PipelineReps)%2 != 0:
		return fmt.Errorf("%d pipelines × %d repetitions: the number of pairs must be even, so that each side goes first equally often",
			p.Pipelines, p.PipelineReps)
	case p.Handovers < 1:
		return fmt.Errorf("the plan measures no handover")
	}
	return nil
}
