// Command layers checks that the files of each Go package stand in layers: no two files use each other's names,
// directly or through other files of the package, so that each file can be read knowing only the files beneath it.
// Given package patterns (read from -dir), it names every tangle, the files in it and the names that tie
// them, and exits 1 when it finds one. With -floors it prints each package's files floor by floor instead, the
// ground first: a file stands one floor above the highest file it uses; with -table it prints them side by side, one
// column a package in the order given, as docs/architecture.md shows the controllers'.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

func main() {
	floors := flag.Bool("floors", false, "print each package's files floor by floor")
	table := flag.Bool("table", false, "print the packages' floors side by side as a Markdown table (docs/architecture.md)")
	dir := flag.String("dir", ".", "the directory the patterns are read from (a module's root)")
	flag.Parse()
	graphs, err := load(*dir, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	if *table {
		out, err := floorsTable(graphs, flag.Args())
		if err != nil {
			fmt.Fprintln(os.Stderr, "layers:", err)
			os.Exit(2)
		}
		fmt.Print(out)
		return
	}
	if *floors {
		for _, pkg := range slices.Sorted(maps.Keys(graphs)) {
			fmt.Print(floorsText(pkg, graphs[pkg]))
		}
		return
	}
	if report := tangled(graphs); report != "" {
		fmt.Fprint(os.Stderr, report)
		os.Exit(1)
	}
}

// tangled is the report of every package whose files use each other, or "" when none does.
func tangled(graphs map[string]graph) string {
	var b strings.Builder
	for _, pkg := range slices.Sorted(maps.Keys(graphs)) {
		for _, t := range graphs[pkg].tangles() {
			fmt.Fprintf(&b, "%s: %s use each other; a file may use only the files beneath it:\n", pkg, strings.Join(t, ", "))
			for _, line := range graphs[pkg].explain(t) {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
	}
	return b.String()
}

// floorsText lists a package's files floor by floor, the ground first.
func floorsText(pkg string, g graph) string {
	if len(g.tangles()) > 0 {
		return pkg + ": tangled, no floors\n"
	}
	byFloor := map[int][]string{}
	for f, n := range g.floors() {
		byFloor[n] = append(byFloor[n], f)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", pkg)
	for _, n := range slices.Sorted(maps.Keys(byFloor)) {
		fmt.Fprintf(&b, "  %d: %s\n", n, strings.Join(slices.Sorted(slices.Values(byFloor[n])), " "))
	}
	return b.String()
}
