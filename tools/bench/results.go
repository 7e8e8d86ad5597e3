package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Results is everything a run measured; docs/benchmarks/results.json holds the last full run's.
type Results struct {
	Plan    Plan      `json:"plan"`
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	// Setup is how the cluster's own processes were configured, read from their command lines.
	Setup clusterSetup `json:"setup"`
	// AuditEvents and AuditErrors are the apiserver's audit counters' growth over the run; an error is a
	// dropped event, and fails the run.
	AuditEvents float64 `json:"auditEvents"`
	AuditErrors float64 `json:"auditErrors"`
	// DaemonSet holds convergence, rolling-update, in-place and scale trials, and the tables built from them.
	DaemonSet     []trial `json:"daemonSetTrials"`
	Convergence   Report  `json:"convergence"`
	RollingUpdate Report  `json:"rollingUpdate"`
	// InPlaceUpdate and InPlaceGated compare Keelson's in-place image update, without and with the readiness
	// gate, with the built-in's rolling update of the same run.
	InPlaceUpdate Report `json:"inPlaceUpdate"`
	InPlaceGated  Report `json:"inPlaceGated"`
	// Scale is convergence at each of Plan.ScaleNodes; ScaleRSS the daemonset-controller's resident size once
	// Keelson's DaemonSet had converged there (its largest replica), and ScalePassP99 the upper bound of the
	// histogram bucket holding the 99th percentile of its passes during that convergence, in seconds, by N.
	Scale        Report          `json:"scale"`
	ScaleRSS     map[int]int64   `json:"scaleRSSBytes"`
	ScalePassP99 map[int]float64 `json:"scalePassP99Seconds"`
	// FirstCounts is how often each implementation went first at each node count.
	FirstCounts map[string]int `json:"firstCounts"`
	// Steady is the idle window with every controller holding objects.
	Steady   steadyResult   `json:"steady"`
	Sizer    sizerResult    `json:"sizer"`
	Pipeline pipelineResult `json:"pipeline"`
	// RSS is each binary's largest replica's resident size, read at the end of the idle window.
	RSS map[string]int64 `json:"rssBytes"`
	// MemoryRequest and MemoryLimit are each controller container's, as deployed.
	MemoryRequest  map[string]int64 `json:"memoryRequestBytes"`
	MemoryLimit    map[string]int64 `json:"memoryLimitBytes"`
	Handovers      []handoverResult `json:"handovers"`
	HandoverMedian Summary          `json:"handoverSummary"`
}

// inPlaceTrials are Keelson's in-place updates of one kind (bench) and the built-in's rolling updates, all under
// bench: the two ways of rolling out the same image change, compared.
func inPlaceTrials(ts []trial, bench string) []trial {
	out := filterBench(ts, bench)
	for _, t := range filterBench(ts, benchRollingUpdate) {
		if t.Impl == implBuiltin {
			t.Bench = bench
			out = append(out, t)
		}
	}
	return out
}

// filterBench keeps one benchmark's trials.
func filterBench(ts []trial, bench string) []trial {
	var out []trial
	for _, t := range ts {
		if t.Bench == bench {
			out = append(out, t)
		}
	}
	return out
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
