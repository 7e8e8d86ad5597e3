package daemonset

import (
	"testing"
)

// Event messages carry no counts, so that the passes of one rollout repeat the same message.
func TestEventSummaries(t *testing.T) {
	if got := deletedKinds([]string{deleteUpdate, deleteUpdate, deleteFailed}); got != "failed and outdated" {
		t.Errorf("deletedKinds = %q", got)
	}
	if got := distinct([]string{"c", "a", "b", "a"}); got != "a, b and c" {
		t.Errorf("distinct = %q", got)
	}
	if got := distinct([]string{"5d8f9c7b6", "5d8f9c7b6"}); got != "5d8f9c7b6" {
		t.Errorf("distinct of one revision = %q", got)
	}
}
