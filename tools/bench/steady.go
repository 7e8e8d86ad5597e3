package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// steadyResult is the idle window at the end of the run: every controller holds objects (a DaemonSet of each
// kind on every node, the sizers, the pipelines and their bare twins) and the harness changes nothing.
type steadyResult struct {
	Window metrics.Window `json:"window"`
	// Held is how many objects each controller held in the window.
	Held map[string]int `json:"held"`
	// Writes are the writes each controller's user made in the window, by kind of write.
	Writes map[string]map[string]int `json:"writes"`
	// Missable are the periodic writes longer than the window, which it may not have seen.
	Missable []periodic `json:"missable"`
}

// builtinDaemonSet names the apps/v1 DaemonSet controller in the steady-state table.
const builtinDaemonSet = "apps/v1 daemon-set-controller"

// steadyControllers are the steady-state table's rows, in order.
var steadyControllers = append(append([]string{}, binaryNames...), builtinDaemonSet)

// steadyRow is one controller's line in the steady-state table.
type steadyRow struct {
	Controller string
	Held       int
	Writes     int
	// Reconciles is per second, or empty where nothing measured it (kube-controller-manager's metrics are not
	// scraped).
	Reconciles string
}

// steadyRows renders the window's measurements per controller.
func steadyRows(s steadyResult) []steadyRow {
	var out []steadyRow
	for _, name := range steadyControllers {
		row := steadyRow{Controller: name, Held: s.Held[name], Writes: sumWrites(s.Writes[name])}
		if v, ok := s.Window.ReconcilesPerSecond[name]; ok {
			row.Reconciles = fmt.Sprintf("%.2f", v)
		}
		out = append(out, row)
	}
	return out
}

// keelsonSteadyWrites totals Keelson's controllers' writes in the window.
func keelsonSteadyWrites(s steadyResult) int {
	n := 0
	for _, b := range binaryNames {
		n += sumWrites(s.Writes[b])
	}
	return n
}

// steadyTable is the steady-state table as Markdown; a cell nothing measured says so.
func steadyTable(s steadyResult) string {
	var b strings.Builder
	b.WriteString("| controller | objects held | writes | reconciles per second |\n|---|---|---|---|\n")
	for _, r := range steadyRows(s) {
		rec := r.Reconciles
		if rec == "" {
			rec = "not measured"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", r.Controller, r.Held, r.Writes, rec)
	}
	return b.String()
}

// missableText says which periodic writes the window may have missed, or that it covers all.
func missableText(window time.Duration, missable []periodic) string {
	if len(missable) == 0 {
		return fmt.Sprintf("The %.0f s window is longer than every periodic requeue of the controllers, so each would have fired in it.", window.Seconds())
	}
	var parts []string
	for _, p := range missable {
		parts = append(parts, fmt.Sprintf("%s: %s %s", p.Controller, p.What, humanDuration(p.Period)))
	}
	return fmt.Sprintf("The %.0f s window can miss these periodic writes, being shorter than their period: %s.",
		window.Seconds(), strings.Join(parts, "; "))
}

// humanDuration writes a period as a reader would: 30 s, 1 min, 15 min, 10 h.
func humanDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return fmt.Sprintf("%g s", d.Seconds())
}

func sumWrites(w map[string]int) int {
	n := 0
	for _, c := range w {
		n += c
	}
	return n
}
