package main

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// floorsTable is a Markdown table of the packages' floors, the top floor first, one column a package in the order
// of patterns (each names one package, "./a/b"), headed by the package's last path element.
func floorsTable(graphs map[string]graph, patterns []string) (string, error) {
	cols := make([]map[int][]string, len(patterns))
	top := 0
	var b strings.Builder
	b.WriteString("| floor |")
	for i, pattern := range patterns {
		g, err := graphOf(graphs, pattern)
		if err != nil {
			return "", err
		}
		cols[i] = map[int][]string{}
		for f, n := range g.floors() {
			cols[i][n] = append(cols[i][n], "`"+f+"`")
			top = max(top, n)
		}
		fmt.Fprintf(&b, " %s |", path.Base(pattern))
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(patterns)) + "\n")
	for n := top; n >= 1; n-- {
		fmt.Fprintf(&b, "| %d |", n)
		for _, col := range cols {
			fmt.Fprintf(&b, " %s |", strings.Join(slices.Sorted(slices.Values(col[n])), ", "))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// graphOf is the graph of the one package pattern names ("./a/b": the package whose path ends in /a/b), which must
// be untangled.
func graphOf(graphs map[string]graph, pattern string) (graph, error) {
	suffix := "/" + strings.Trim(strings.TrimPrefix(pattern, "./"), "/")
	var found []string
	for _, pkg := range slices.Sorted(maps.Keys(graphs)) {
		if strings.HasSuffix(pkg, suffix) {
			found = append(found, pkg)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s names %d of the packages loaded (%v): name one package", pattern, len(found), found)
	}
	if g := graphs[found[0]]; len(g.tangles()) == 0 {
		return g, nil
	}
	return nil, fmt.Errorf("%s is tangled: it has no floors", found[0])
}
