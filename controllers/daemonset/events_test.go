package daemonset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
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

// Events regard the DaemonSet without its resourceVersion, so that a rollout's repeated events form one series.
func TestEventSubjectDropsTheResourceVersion(t *testing.T) {
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u",
		ResourceVersion: "42", Labels: map[string]string{"x": "y"}}}
	got := eventSubject(ds)
	if got.ResourceVersion != "" || got.Name != "a" || got.Namespace != "ns" || got.UID != "u" {
		t.Fatalf("eventSubject = %+v", got.ObjectMeta)
	}
}
