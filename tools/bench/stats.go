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
	// Runs holds every measurement, in the order taken.
	Runs []time.Duration `json:"runs"`
}

// Summarize returns the median (the mean of the middle two for an even count) and the extremes.
func Summarize(runs []time.Duration) Summary {
	if len(runs) == 0 {
		return Summary{}
	}
	s := append([]time.Duration(nil), runs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	mid := len(s) / 2
	median := s[mid]
	if len(s)%2 == 0 {
		median = (s[mid-1] + s[mid]) / 2
	}
	return Summary{Median: median, Min: s[0], Max: s[len(s)-1], Runs: runs}
}

// Ratio is a / b, 0 when b is 0.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Order returns which implementation runs first in repetition rep: they alternate, so that neither always meets
// a cluster warmed (or loaded) by the other.
func Order(rep int, impls []string) []string {
	out := append([]string(nil), impls...)
	if rep%2 == 1 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}
