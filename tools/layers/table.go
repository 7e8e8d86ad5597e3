package main

import (
	"fmt"
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

// graphOf is the graph of the package pattern names, which must be untangled.
func graphOf(graphs map[string]graph, pattern string) (graph, error) {
	for pkg, g := range graphs {
		if strings.HasSuffix(pkg, strings.TrimPrefix(pattern, ".")) {
			if len(g.tangles()) > 0 {
				return nil, fmt.Errorf("%s is tangled: it has no floors", pkg)
			}
			return g, nil
		}
	}
	return nil, fmt.Errorf("no package %s was loaded", pattern)
}
