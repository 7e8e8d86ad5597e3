package main

import (
	"strings"
	"testing"
)

// A report in chainsaw's JSON format: one passing and one failing operation.
const sample = `{"name":"chainsaw-report","tests":[{"name":"e2e/upgrade","namespace":"chainsaw-a","steps":[
 {"name":"the previous release is installed","operations":[{"name":"","type":"script"}]},
 {"name":"objects of every kind","operations":[{"type":"assert","name":"Deployment/models-step-1",
  "failure":{"error":"apps/v1/Deployment/chainsaw-a/models-step-1\n--- expected\n+++ actual\n-  availableReplicas: 1"}}]}]}]}`

func TestFailuresAreTheFailedOperations(t *testing.T) {
	fs, err := failures([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("got %d failures, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Test != "e2e/upgrade" || f.Namespace != "chainsaw-a" || f.Step != "objects of every kind" ||
		f.Operation != "assert Deployment/models-step-1" {
		t.Errorf("failure = %+v", f)
	}
	s := summary(fs)
	for _, want := range []string{"FAILED e2e/upgrade (namespace chainsaw-a)", `step "objects of every kind"`, "-  availableReplicas: 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func TestLongErrorsAreCut(t *testing.T) {
	s := summary([]failure{{Test: "t", Err: strings.Repeat("line\n", 100)}})
	if got := strings.Count(s, "line\n"); got != maxErrorLines {
		t.Errorf("%d error lines in the summary, want %d", got, maxErrorLines)
	}
	if !strings.Contains(s, "75 more lines") {
		t.Errorf("the cut is not said:\n%s", s)
	}
}

func TestNoFailureIsSaid(t *testing.T) {
	if s := summary(nil); !strings.Contains(s, "no failed operation") {
		t.Errorf("summary of nothing = %q", s)
	}
}
