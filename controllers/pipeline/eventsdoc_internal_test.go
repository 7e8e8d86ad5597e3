package pipeline

import (
	"os"
	"strings"
	"testing"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// The events table of docs/operations.md lists the pipeline controller's events: its phase changes (each phase
// named), its steps' troubles (by the step's reason) and the autoscaler hand-back.
func TestEventReasonsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| pipeline-controller | ") {
			rows = append(rows, l)
		}
	}
	table := strings.Join(rows, "\n")
	for _, want := range []string{"`Pipeline<Phase>`", "the step's reason", "`" + ReasonAutoscalerRemoved + "`"} {
		if !strings.Contains(table, want) {
			t.Errorf("docs/operations.md's events table does not list %s", want)
		}
	}
	// The phases a phase event can name are the ones the table says it may.
	for _, p := range []inferencev1alpha1.Phase{inferencev1alpha1.PhaseReady, inferencev1alpha1.PhaseDegraded, inferencev1alpha1.PhaseFailed} {
		if !strings.Contains(table, "`Pipeline"+string(p)+"`") {
			t.Errorf("docs/operations.md's events table does not name Pipeline%s", p)
		}
	}
}
