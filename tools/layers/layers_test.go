//go:build integration

package main

import (
	"strings"
	"testing"
)

// Two files that use each other are a tangle, named with the names that tie them; a file of methods above the file
// of their type is not, and stands one floor above it.
func TestTangles(t *testing.T) {
	graphs, err := load(".", "./testdata/tangled", "./testdata/layered")
	if err != nil {
		t.Fatal(err)
	}
	report := tangled(graphs)
	for _, want := range []string{"testdata/tangled: a.go, b.go use each other", "a.go uses b.go: b", "b.go uses a.go: A"} {
		if !strings.Contains(report, want) {
			t.Errorf("report %q does not say %q", report, want)
		}
	}
	if strings.Contains(report, "layered") {
		t.Errorf("report %q names the layered package", report)
	}
	var layered graph
	for pkg, g := range graphs {
		if strings.HasSuffix(pkg, "/layered") {
			layered = g
		}
	}
	if f := layered.floors(); f["a.go"] != 1 || f["b.go"] != 2 {
		t.Errorf("floors %v, want a.go on 1 and b.go on 2", f)
	}
}

// A tangle through a third file is found too, and each file of it named once.
func TestTangleThroughAThirdFile(t *testing.T) {
	g := graph{}
	g.use("a.go", "b.go", "B")
	g.use("b.go", "c.go", "C")
	g.use("c.go", "a.go", "A")
	g.use("d.go", "a.go", "A")
	got := g.tangles()
	if len(got) != 1 || strings.Join(got[0], " ") != "a.go b.go c.go" {
		t.Fatalf("tangles %v, want [[a.go b.go c.go]]", got)
	}
	if f := (graph{"x.go": {"y.go": {"Y"}}, "y.go": {}}).floors(); f["x.go"] != 2 || f["y.go"] != 1 {
		t.Errorf("floors %v", f)
	}
}
