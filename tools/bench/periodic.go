package main

import "time"

// periodic is a write a controller may make on a clock rather than in answer to a change: an idle window shorter
// than its period can miss it, and then a zero proves nothing about it.
type periodic struct {
	Controller string        `json:"controller"`
	What       string        `json:"what"`
	Period     time.Duration `json:"period"`
}

// periodicRequeues are the controllers' timed requeues (their RequeueAfter constants) and the informers' resync.
// The benchmark's objects are healthy, so the error-path ones should not fire in the window at all; they are
// listed so the report says which of them a window of a given length could not have seen.
var periodicRequeues = []periodic{
	{"workload-sizer", "a sizer blocked by a PodDisruptionBudget, Service or Ingress it does not own looks again", time.Minute},
	{"workload-sizer", "an in-place resize under way is polled", 5 * time.Second},
	{"pipeline-controller", "a step whose name is taken by someone else's object looks again", 30 * time.Second},
	{"pipeline-controller", "a volume that is not yet bound is polled", 10 * time.Second},
	{"pipeline-controller", "a user's claim that is not yet Bound is polled", 5 * time.Second},
	{"daemonset-controller", "a node whose pod keeps failing is retried, with a backoff of up to", 15 * time.Minute},
	{"every controller", "the webhook certificate pass runs again (renewal is time-based; it writes only when a certificate is due)", time.Hour},
	{"every controller", "the informers resync every object (controller-runtime's default SyncPeriod, 10 h with jitter)", 10 * time.Hour},
}

// missablePeriods returns the periodic writes whose period is longer than the window: the window may fall
// entirely between two of them.
func missablePeriods(window time.Duration, all []periodic) []periodic {
	var out []periodic
	for _, p := range all {
		if p.Period > window {
			out = append(out, p)
		}
	}
	return out
}
