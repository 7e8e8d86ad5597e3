package main

import (
	"fmt"
	"sort"
	"time"
)

// stallFactor is how many times slower than the median of its peers a trial may be before it is a stall, and
// stallMargin by how much at least: a median alone hides one trial of ten minutes among three of ten seconds, which
// the run must not; a pipeline of half a second that took two (a pause of the noisy machine) is no stall.
const (
	stallFactor = 3
	stallMargin = 5 * time.Second
)

// timedTrials is every timed trial of a run, as trials to judge for stalls: the DaemonSet's, each pipeline of a
// pair and its bare twin, and each leader handover.
func timedTrials(r Results) []trial {
	out := append([]trial(nil), r.DaemonSet...)
	for i, p := range r.Pipeline.Pairs {
		out = append(out, trial{Bench: "pipeline", Impl: implKeelson, Rep: i, Duration: p.Keelson},
			trial{Bench: "pipeline", Impl: "bare twin", Rep: i, Duration: p.Bare})
	}
	for i, h := range r.Handovers {
		out = append(out, trial{Bench: "leader handover", Impl: "workload-sizer", Rep: i, Duration: h.Duration})
	}
	return out
}

// stalledTrials names every trial slower than stallFactor times the median of its peers, and by stallMargin at least: the other trials of the
// same benchmark, implementation and node count. A trial without peers is judged against nothing.
func stalledTrials(trials []trial) []string {
	type key struct {
		bench, impl string
		nodes       int
	}
	groups := map[key][]trial{}
	for _, t := range trials {
		k := key{t.Bench, t.Impl, t.Nodes}
		groups[k] = append(groups[k], t)
	}
	var out []string
	for k, ts := range groups {
		for i, t := range ts {
			var peers []float64
			for j, p := range ts {
				if j != i {
					peers = append(peers, p.Duration.Seconds())
				}
			}
			if len(peers) == 0 {
				continue
			}
			if m := median(peers); m > 0 && t.Duration.Seconds() > stallFactor*m && t.Duration.Seconds()-m > stallMargin.Seconds() {
				at := ""
				if k.nodes > 0 {
					at = fmt.Sprintf(" N=%d", k.nodes)
				}
				out = append(out, fmt.Sprintf("%s %s%s trial %d took %s, over %d× the median of its peers (%s)",
					k.bench, k.impl, at, t.Rep, t.Duration.Round(time.Millisecond), stallFactor,
					time.Duration(m*float64(time.Second)).Round(time.Millisecond)))
			}
		}
	}
	sort.Strings(out)
	return out
}
