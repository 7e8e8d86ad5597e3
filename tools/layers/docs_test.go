//go:build integration

package main

import (
	"os"
	"strings"
	"testing"
)

// docs/architecture.md shows the controllers' floors as the code has them: a file moved to another floor, or a file
// added, fails here until the table is printed again (go -C tools run ./layers -dir .. -table ...).
func TestTheDocsShowTheControllersFloors(t *testing.T) {
	patterns := []string{"./controllers/daemonset", "./controllers/sizer", "./controllers/pipeline"}
	graphs, err := load("../..", patterns...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := floorsTable(graphs, patterns)
	if err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "| floor | daemonset | sizer | pipeline |", "| floor | DaemonSet | WorkloadSizer | Pipeline |", 1)
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(want, "\n", 2)[0]
	_, rest, ok := strings.Cut(string(doc), header)
	got, _, _ := strings.Cut(rest, "\n\n")
	if !ok || header+got+"\n" != want {
		t.Errorf("docs/architecture.md does not show the controllers' floors as they are; the table is:\n%s", want)
	}
}
