package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// graph is one package's files and, for each file, the files whose names it uses with the names used.
type graph map[string]map[string][]string

// use records that file from uses name, defined in file to.
func (g graph) use(from, to, name string) {
	if g[from] == nil {
		g[from] = map[string][]string{}
	}
	if g[to] == nil {
		g[to] = map[string][]string{}
	}
	if from == to || slices.Contains(g[from][to], name) {
		return
	}
	g[from][to] = append(g[from][to], name)
}

// tangles are the groups of two files or more that use each other, directly or through others (the strongly
// connected components of the graph), each sorted, in the order of their first file.
func (g graph) tangles() [][]string {
	t := tarjan{g: g, index: map[string]int{}, low: map[string]int{}, on: map[string]bool{}}
	for _, f := range slices.Sorted(maps.Keys(g)) {
		if _, seen := t.index[f]; !seen {
			t.visit(f)
		}
	}
	slices.SortFunc(t.out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return t.out
}

// tarjan is the state of Tarjan's algorithm over a graph.
type tarjan struct {
	g     graph
	index map[string]int
	low   map[string]int
	on    map[string]bool
	stack []string
	next  int
	out   [][]string
}

// visit numbers f, follows the files it uses, and closes a component when f is its root.
func (t *tarjan) visit(f string) {
	t.index[f], t.low[f] = t.next, t.next
	t.next++
	t.stack = append(t.stack, f)
	t.on[f] = true
	for _, u := range slices.Sorted(maps.Keys(t.g[f])) {
		if _, seen := t.index[u]; !seen {
			t.visit(u)
			t.low[f] = min(t.low[f], t.low[u])
		} else if t.on[u] {
			t.low[f] = min(t.low[f], t.index[u])
		}
	}
	if t.low[f] != t.index[f] {
		return
	}
	var comp []string
	for {
		u := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.on[u] = false
		comp = append(comp, u)
		if u == f {
			break
		}
	}
	if len(comp) > 1 {
		slices.Sort(comp)
		t.out = append(t.out, comp)
	}
}

// explain names, for a tangle, each use between its files: "a.go uses b.go: x, y".
func (g graph) explain(tangle []string) []string {
	var out []string
	for _, a := range tangle {
		for _, b := range tangle {
			if names := g[a][b]; len(names) > 0 {
				out = append(out, fmt.Sprintf("%s uses %s: %s", a, b, strings.Join(slices.Sorted(slices.Values(names)), ", ")))
			}
		}
	}
	return out
}

// floors places each file of a graph without tangles one floor above the highest file it uses; a file that uses
// none is on floor 1.
func (g graph) floors() map[string]int {
	out := map[string]int{}
	var place func(f string) int
	place = func(f string) int {
		if n, ok := out[f]; ok {
			return n
		}
		out[f] = 1 // no tangle: never read before it is set below
		n := 1
		for u := range g[f] {
			n = max(n, place(u)+1)
		}
		out[f] = n
		return n
	}
	for f := range g {
		place(f)
	}
	return out
}
