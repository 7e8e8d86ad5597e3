package main

import (
	"strings"
	"sync/atomic"
)

// verdicts is what a watch judged: how many events, how many broke the invariant, and what broke it since the last
// take. Its owner's lock guards it.
type verdicts struct {
	events, violations int
	found              []string
}

// record counts one judged event, and what broke the invariant in it (nothing when bad is empty).
func (v *verdicts) record(bad []string) {
	v.events++
	if len(bad) > 0 {
		v.violations++
		if len(v.found) < maxExamples {
			v.found = append(v.found, strings.Join(bad, "; "))
		}
	}
}

// takeFound returns what broke the invariant since the last take.
func (v *verdicts) takeFound() []string {
	out := v.found
	v.found = nil
	return out
}

// watchedDeployments is the part of a workload whose Deployments a watch judges at every event (nil: a list does),
// with the violations found beside it by listing what a watch cannot show.
type watchedDeployments struct {
	watch          *deploymentWatch
	listViolations atomic.Int32
}

// judged is how many Deployment events the watch judged and how many broke the invariant, the list's findings
// included (0, 0 without a watch).
func (w *watchedDeployments) judged() (events, violations int) {
	if w.watch == nil {
		return 0, 0
	}
	events, violations = w.watch.judged()
	return events, violations + int(w.listViolations.Load())
}
