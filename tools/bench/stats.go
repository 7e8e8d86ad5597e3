package main

import (
	"sort"
	"time"
)

// Summary is the median and spread of repeated measurements.
type Summary struct {
	// Median of the runs.
	Median time.Duration `json:"median"`
	// Min and Max bound the spread.
	Min time.Duration `json:"min"`
	Max time.Duration `json:"max"`
	// P10 and P90 are the 10th and 90th percentiles (linear between the nearest ranks): the spread without the
	// one outlier a shared machine always produces.
	P10 time.Duration `json:"p10"`
	P90 time.Duration `json:"p90"`
	// Runs holds every measurement, in the order taken.
	Runs []time.Duration `json:"runs"`
}

// Summarize returns the median (the mean of the middle two for an even count), the extremes and the 10th and
// 90th percentiles.
func Summarize(runs []time.Duration) Summary {
	if len(runs) == 0 {
		return Summary{}
	}
	s := append([]time.Duration(nil), runs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return Summary{Median: percentile(s, 0.5), Min: s[0], Max: s[len(s)-1], P10: percentile(s, 0.1),
		P90: percentile(s, 0.9), Runs: runs}
}

// percentile interpolates linearly between the two ranks around p·(n−1) of the sorted s; at p = 0.5 that is the
// usual median.
func percentile(sorted []time.Duration, p float64) time.Duration {
	pos := p * float64(len(sorted)-1)
	lo := int(pos)
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + time.Duration(frac*float64(sorted[lo+1]-sorted[lo]))
}

// Ratio is a / b, 0 when b is 0.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Order returns which implementation runs first in repetition rep: they alternate, so that neither always meets
// a cluster warmed (or loaded) by the other. Over an even number of repetitions each goes first equally often.
func Order(rep int, impls []string) []string {
	out := append([]string(nil), impls...)
	if rep%2 == 1 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// FirstCounts counts how often each implementation went first over reps repetitions ordered by Order.
func FirstCounts(reps int, impls []string) map[string]int {
	out := map[string]int{}
	for rep := range reps {
		out[Order(rep, impls)[0]]++
	}
	return out
}
