package main

import (
	"fmt"
	"strings"
	"time"
)

// mib renders bytes in MiB.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// memorySentence concludes from the measured resident sizes and each controller's memory request and limit: it
// names the controller closest to its request, and says "leaves room" only when every one is below its request.
func memorySentence(rss, request, limit map[string]int64, nodes, unrelated int) string {
	worst, worstShare := "", -1.0
	for _, b := range binaryNames {
		if request[b] <= 0 {
			continue
		}
		if share := float64(rss[b]) / float64(request[b]); share > worstShare {
			worst, worstShare = b, share
		}
	}
	if worst == "" {
		return "- **Memory**: not measured.\n"
	}
	head := fmt.Sprintf("- **Memory**: with %d nodes and %d unrelated pods in the cluster, the largest resident size "+
		"relative to its request is %s's, %s against a request of %s and a limit of %s", nodes, unrelated, worst,
		mib(rss[worst]), mib(request[worst]), mib(limit[worst]))
	switch {
	case limit[worst] > 0 && rss[worst] > limit[worst]:
		return head + ": above the limit, so the controller would be OOM-killed at this size; raise " +
			"`resources.limits.memory` in the chart's values.\n"
	case rss[worst] > request[worst]:
		return head + ": above the request, so the scheduler reserves less than it uses; raise " +
			"`resources.requests.memory` to at least the measured size.\n"
	}
	return head + ": every controller stays below its request, so the chart's request and limit leave room.\n"
}

// idleSentence concludes from the steady-state window, saying what it cannot see.
func idleSentence(s steadyResult, setup clusterSetup) string {
	n := keelsonSteadyWrites(s)
	verdict := "Keelson costs nothing"
	if n > 0 {
		verdict = "Keelson still writes"
	}
	var held []string
	for _, b := range binaryNames {
		held = append(held, fmt.Sprintf("%d for %s", s.Held[b], b))
	}
	out := fmt.Sprintf("- **Idle, %s**: %d writes in %.0f s while holding objects (%s); reconciles per second: %s.",
		verdict, n, s.Window.To.Sub(s.Window.From).Seconds(), strings.Join(held, ", "), rates(s.Window.ReconcilesPerSecond))
	if !setup.LeasesAudited {
		out += " Not counted: Lease writes, which the audit policy leaves out for every user — Keelson's leader" +
			" election renews its Lease about once per `leaderElection.retryPeriod` per controller"
		if setup.BuiltinLeaderElection {
			out += ", and kube-controller-manager's does the same."
		} else {
			out += "; kube-controller-manager runs here with `--leader-elect=false`, so it renews none."
		}
	}
	return out + " " + missableText(s.Window.To.Sub(s.Window.From), s.Missable) + "\n"
}

// handoverSentence concludes from the handover times and the lease duration: a handover as long as the lease
// means the old leader did not release it.
func handoverSentence(median time.Duration, lease time.Duration) string {
	head := fmt.Sprintf("- **Upgrades**: deleting a controller's leader pod (as a rollout of its Deployment does) "+
		"leaves it without a leader for %.2f s (median)", median.Seconds())
	if lease > 0 && median < lease {
		return head + fmt.Sprintf(", well under the %s lease duration: the old leader releases its lease on SIGTERM.\n", lease)
	}
	return head + fmt.Sprintf(", not less than the %s lease duration: the old leader's lease ran out instead of "+
		"being released.\n", lease)
}

// pipelineSentence concludes from the overheads per pipeline.
func pipelineSentence(p pipelineResult) string {
	o := p.Overhead
	verdict := "under the 1 s target"
	if o.Median >= time.Second {
		verdict = "over the 1 s target"
	}
	return fmt.Sprintf("- **Pipeline**: a %d-step pipeline reaches Ready %+.3f s later than the same "+
		"Deployments and Services created directly reach available (median of %d pairs; p10 %+.3f s, p90 %+.3f s; "+
		"min %+.3f s, max %+.3f s): %s.\n", p.Steps, o.Median.Seconds(), len(p.Pairs), o.P10.Seconds(), o.P90.Seconds(),
		o.Min.Seconds(), o.Max.Seconds(), verdict)
}

// writesSentence concludes from the writes per converged node.
func writesSentence(row Row) string {
	tail := "the pod creations themselves and little else"
	if row.KeelsonWritesPerNode > 1.1 {
		tail = "more than the pod creations"
	}
	return fmt.Sprintf("- **API cost**: %.2f writes per converged node for Keelson against %.2f for apps/v1 — %s "+
		"(see what the writes are, below).\n", row.KeelsonWritesPerNode, row.BuiltinWritesPerNode, tail)
}

// speedWord says how Keelson compares with the built-in for a ratio of their medians.
func speedWord(ratio float64) string {
	switch {
	case ratio == 0:
		return "not compared"
	case ratio < 0.95:
		return "faster than apps/v1"
	case ratio <= 1.05:
		return "on par with apps/v1"
	}
	return "slower than apps/v1"
}

// rates renders reconciles per second by controller, in binaryNames order.
func rates(m map[string]float64) string {
	parts := make([]string, 0, len(binaryNames))
	for _, name := range binaryNames {
		parts = append(parts, fmt.Sprintf("%s %.2f", name, m[name]))
	}
	return strings.Join(parts, ", ")
}
