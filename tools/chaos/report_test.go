package main

import (
	"strings"
	"testing"
	"time"
)

// The section replaces only what lies between its markers, and is appended when the document has none.
func TestReplaceSection(t *testing.T) {
	doc := "# Reliability\n\n## Bad input\n\ntable\n"
	once := replaceSection(doc, "## Faults\n\nv1\n")
	if !strings.HasPrefix(once, doc) || !strings.Contains(once, sectionBegin+"\n## Faults\n\nv1\n"+sectionEnd) {
		t.Fatalf("appended section:\n%s", once)
	}
	twice := replaceSection(once+"\n## After\n", "## Faults\n\nv2\n")
	if strings.Contains(twice, "v1") || !strings.Contains(twice, "v2") || !strings.Contains(twice, "## Bad input") ||
		!strings.Contains(twice, "## After") || strings.Count(twice, sectionBegin) != 1 {
		t.Fatalf("replaced section:\n%s", twice)
	}
}

// The table gives every scenario's counts, handovers and recovery; a broken invariant is quoted.
func TestFaultsSection(t *testing.T) {
	r := Result{Scenario: "daemonset: leader death", Controller: "daemonset-controller", Size: "1 DaemonSet on 200 nodes",
		Invariant: "no node runs two pods", Samples: 812, Violations: 1, Examples: []string{"node n-1 runs 2 live pods"},
		Faults:   []FaultResult{{FaultKill, 16 * time.Second}, {FaultDelete, 2 * time.Second}, {FaultStop, 17 * time.Second}},
		Recovery: 41 * time.Second}
	got := faultsSection([]Result{r}, 7)
	for _, want := range []string{"seed 7", "| daemonset: leader death | 1 DaemonSet on 200 nodes | 1 sigstop, 1 sigkill, 1 delete | 812 | 1 | sigstop 17.0 s, 17.0 s; sigkill 16.0 s, 16.0 s; delete 2.0 s, 2.0 s | 41.0 s |",
		"Broken: node n-1 runs 2 live pods."} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
}
