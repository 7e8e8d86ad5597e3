package main

import (
	"strings"
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
