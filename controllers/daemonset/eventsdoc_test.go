package daemonset

import (
	"os"
	"strings"
	"testing"
)

// Every event reason the controller records is in the events table of docs/operations.md.
func TestEventReasonsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{eventCreated, eventDeleted, eventFailedCreate, eventFailedDelete, eventUpdated, eventFailedUpdate, eventRolloutComplete, eventRolloutStuck,
		eventRolloutPaused, eventRolledBack} {
		if !strings.Contains(string(doc), "| daemonset-controller | `"+r+"` |") {
			t.Errorf("docs/operations.md does not list the event %s", r)
		}
	}
}
