package metrics

import (
	"bufio"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ReconcileTime is controller-runtime's histogram of how long each reconcile (a pass) took, per controller.
const ReconcileTime = "controller_runtime_reconcile_time_seconds"

// Buckets reads a histogram's cumulative buckets for one controller from a Prometheus text exposition, summed over
// its series: upper bound (le, +Inf included) to the count of observations at or below it.
func Buckets(text, histogram, controller string) map[float64]float64 {
	out := map[float64]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), histogram+"_bucket{")
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 {
			continue
		}
		labels, value := rest[:end], strings.TrimSpace(rest[end+1:])
		if labelValue(labels, "controller") != controller {
			continue
		}
		le, err := strconv.ParseFloat(labelValue(labels, "le"), 64)
		if err != nil {
			continue
		}
		if f := strings.Fields(value); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[le] += v
			}
		}
	}
	return out
}

// Quantile is the upper bound of the bucket that holds the q-quantile of the observations made between two reads
// of the same histogram (Buckets): a bound, not an estimate between bounds, so a pass near 2 s is never read as
// less. It returns 0 when nothing was observed, and +Inf when the quantile lies past the last finite bound.
func Quantile(before, after map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for le := range after {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0
	}
	for _, le := range bounds {
		if after[le]-before[le] >= q*total {
			return le
		}
	}
	return math.Inf(1)
}
