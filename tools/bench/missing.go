package main

import (
	"fmt"
	"sort"
)

// expectedWriter is a user that must have written in a stretch of the run: a converged DaemonSet has created
// pods, a Sized sizer has patched its target, a Ready pipeline has created its steps.
type expectedWriter struct {
	// What names the stretch, for the error.
	What string
	User string
	// Writes are the user's writes in it, from the audit log.
	Writes int
}

// missingMeasurements lists every measurement the run should have taken and did not. A zero there is not a
// result: a user name the audit log never shows, or a process that was not found, would otherwise read as
// "no writes" or "no memory" and pass its target.
func missingMeasurements(r Results, writers []expectedWriter) []string {
	var out []string
	for _, w := range writers {
		if w.Writes == 0 {
			out = append(out, fmt.Sprintf("%s: no write by %s in the audit log", w.What, w.User))
		}
	}
	for _, b := range binaryNames {
		if r.RSS[b] <= 0 {
			out = append(out, fmt.Sprintf("memory: no %s process found", b))
		}
		if r.MemoryRequest[b] <= 0 {
			out = append(out, fmt.Sprintf("memory: no memory request read from the %s Deployment", b))
		}
		if _, ok := r.Steady.Window.ReconcilesPerSecond[b]; !ok {
			out = append(out, fmt.Sprintf("steady state: no reconcile count scraped from %s", b))
		}
	}
	if r.Steady.Window.To.Sub(r.Steady.Window.From) <= 0 {
		out = append(out, "steady state: no idle window")
	}
	kinds := []string{benchConvergence, benchRollingUpdate, benchInPlace, benchInPlaceGated}
	if len(r.Plan.ScaleNodes) > 0 {
		kinds = append(kinds, benchScale)
	}
	for _, n := range r.Plan.ScaleNodes {
		if r.ScaleRSS[n] <= 0 {
			out = append(out, fmt.Sprintf("scale: no daemonset-controller memory read at N = %d", n))
		}
		if r.ScalePassP99[n] <= 0 {
			out = append(out, fmt.Sprintf("scale: no daemonset-controller pass time read at N = %d", n))
		}
	}
	for _, kind := range kinds {
		if len(filterBench(r.DaemonSet, kind)) == 0 {
			out = append(out, fmt.Sprintf("DaemonSet %s: no trial", kind))
		}
	}
	if want := r.Plan.Pipelines * r.Plan.PipelineReps; len(r.Pipeline.Pairs) != want {
		out = append(out, fmt.Sprintf("pipeline: %d pairs measured, want %d", len(r.Pipeline.Pairs), want))
	}
	if len(r.Handovers) == 0 {
		out = append(out, "leader handover: none measured")
	}
	if r.Sizer.ToSized <= 0 {
		out = append(out, "sizer: no time to Sized")
	}
	sort.Strings(out)
	return out
}
