package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Row is one node count's result: each implementation's times, their ratio, and writes per converged node.
type Row struct {
	// Nodes is N.
	Nodes int `json:"nodes"`
	// Keelson and Builtin summarize the convergence times.
	Keelson Summary `json:"keelson"`
	Builtin Summary `json:"builtin"`
	// Ratio is Keelson's median over the built-in's: at most 1.0 is the target.
	Ratio float64 `json:"ratio"`
	// KeelsonWritesPerNode and BuiltinWritesPerNode are the median writes per converged node.
	KeelsonWritesPerNode float64 `json:"keelsonWritesPerNode"`
	BuiltinWritesPerNode float64 `json:"builtinWritesPerNode"`
}

// Report is every row, by node count.
type Report []Row

// buildReport groups trials by node count and implementation.
func buildReport(trials []trial) Report {
	type key struct {
		n    int
		impl string
	}
	times := map[key][]time.Duration{}
	writes := map[key][]float64{}
	var counts []int
	for _, t := range trials {
		k := key{t.Nodes, t.Impl}
		if _, seen := times[key{t.Nodes, implKeelson}]; !seen {
			if _, seen := times[key{t.Nodes, implBuiltin}]; !seen {
				counts = append(counts, t.Nodes)
			}
		}
		times[k] = append(times[k], t.Duration)
		total := 0
		for _, c := range t.Writes {
			total += c
		}
		writes[k] = append(writes[k], float64(total)/float64(t.Nodes))
	}
	sort.Ints(counts)
	var r Report
	for _, n := range counts {
		row := Row{Nodes: n, Keelson: Summarize(times[key{n, implKeelson}]), Builtin: Summarize(times[key{n, implBuiltin}]),
			KeelsonWritesPerNode: median(writes[key{n, implKeelson}]), BuiltinWritesPerNode: median(writes[key{n, implBuiltin}])}
		row.Ratio = Ratio(row.Keelson.Median, row.Builtin.Median)
		r = append(r, row)
	}
	return r
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// Table renders the report as a Markdown table.
func (r Report) Table() string {
	var b strings.Builder
	b.WriteString("| N | Keelson median (min–max) | built-in median (min–max) | Keelson / built-in | writes per node: Keelson | built-in |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	for _, row := range r {
		fmt.Fprintf(&b, "| %d | %s (%s–%s) | %s (%s–%s) | %.2f | %.2f | %.2f |\n", row.Nodes,
			sec(row.Keelson.Median), sec(row.Keelson.Min), sec(row.Keelson.Max),
			sec(row.Builtin.Median), sec(row.Builtin.Min), sec(row.Builtin.Max),
			row.Ratio, row.KeelsonWritesPerNode, row.BuiltinWritesPerNode)
	}
	return b.String()
}

// resourceWrites averages, per implementation, the writes of each resource over the trials of one benchmark at n
// nodes: which requests the writes per node are made of.
func resourceWrites(trials []trial, bench string, n int) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	runs := map[string]int{}
	for _, t := range trials {
		if t.Bench != bench || t.Nodes != n {
			continue
		}
		runs[t.Impl]++
		if out[t.Impl] == nil {
			out[t.Impl] = map[string]float64{}
		}
		for res, c := range t.Writes {
			out[t.Impl][tableKey(res)] += float64(c)
		}
	}
	for impl, byRes := range out {
		for res := range byRes {
			byRes[res] /= float64(runs[impl])
		}
	}
	return out
}

// tableKey is the row a kind of write is counted in: a status write is one row whichever verb made it, since
// the two implementations write status differently (apps/v1 updates it, Keelson patches it) and a row per verb
// would show each side a zero for the other's.
func tableKey(key string) string {
	verb, res, ok := strings.Cut(key, " ")
	if ok && strings.HasSuffix(res, "/status") && (verb == "update" || verb == "patch") {
		return "update or patch " + res
	}
	return key
}

// resourceTable renders resourceWrites as a Markdown table, resources sorted.
func resourceTable(w map[string]map[string]float64) string {
	seen := map[string]bool{}
	for _, byRes := range w {
		for res := range byRes {
			seen[res] = true
		}
	}
	resources := slices.Sorted(maps.Keys(seen))
	var b strings.Builder
	b.WriteString("| write | Keelson | built-in |\n|---|---|---|\n")
	for _, res := range resources {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f |\n", res, w[implKeelson][res], w[implBuiltin][res])
	}
	return b.String()
}
