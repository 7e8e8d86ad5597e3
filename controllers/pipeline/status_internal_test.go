package pipeline

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A step's node is where a live pod of it runs: an evicted pod, older and listed first, keeps the name of a node it
// no longer runs on until it is collected.
func TestAStepsNodeIsALivePods(t *testing.T) {
	p := &inferencev1alpha1.Pipeline{Spec: inferencev1alpha1.PipelineSpec{Steps: []inferencev1alpha1.Step{{Name: "a", Image: "x"}}}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evicted := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-a-1", CreationTimestamp: metav1.NewTime(at)},
		Spec: corev1.PodSpec{NodeName: "gone"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}
	running := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-a-2", CreationTimestamp: metav1.NewTime(at.Add(time.Minute))},
		Spec: corev1.PodSpec{NodeName: "here"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	o := observed{pods: map[string][]corev1.Pod{"a": {evicted, running}}, now: at.Add(time.Hour)}
	if got := stepState(p, 0, o).Node; got != "here" {
		t.Errorf("node %q, want the running pod's %q", got, "here")
	}
}
