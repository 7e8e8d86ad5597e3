package pipeline

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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

// During a rollout that cannot go on (a surge that keeps the old pod while the new one cannot start), a step says
// what its new pod meets, not what the old one met: that is what it waits for.
func TestAStepTellsItsNewPodsTrouble(t *testing.T) {
	p := &inferencev1alpha1.Pipeline{Spec: inferencev1alpha1.PipelineSpec{Steps: []inferencev1alpha1.Step{{Name: "a", Image: "x:2"}}}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pulling := func(name, hash, image string, created time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: image + ": not found"}}}}}}
	}
	o := observed{now: at.Add(time.Hour), deployments: map[string]*appsv1.Deployment{"a": {}},
		pods: map[string][]corev1.Pod{"a": {pulling("s-a-old", "old", "x:1", at), pulling("s-a-new", "new", "x:2", at.Add(time.Minute))}}}
	if st := stepState(p, 0, o); !strings.Contains(st.Message, "x:2") {
		t.Errorf("message %q, want the new pod's image x:2", st.Message)
	}
}

// The new pods' trouble comes first whatever its kind: an old pod that cannot pull the tag the user just fixed does
// not hide that the new pod cannot be scheduled.
func TestANewPodsTroubleComesBeforeAnOldPodsOfAnotherKind(t *testing.T) {
	p := &inferencev1alpha1.Pipeline{Spec: inferencev1alpha1.PipelineSpec{Steps: []inferencev1alpha1.Step{{Name: "a", Image: "x:2"}}}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-a-old", CreationTimestamp: metav1.NewTime(at),
		Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "old"}},
		Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "server", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-a-new", CreationTimestamp: metav1.NewTime(at.Add(time.Minute)),
		Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "new"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
	o := observed{now: at.Add(time.Hour), deployments: map[string]*appsv1.Deployment{"a": {}},
		pods: map[string][]corev1.Pod{"a": {old, pending}}}
	if st := stepState(p, 0, o); st.Reason != inferencev1alpha1.ReasonUnschedulable || !strings.Contains(st.Message, "s-a-new") {
		t.Errorf("reason %s, message %q: want the new pod's Unschedulable", st.Reason, st.Message)
	}
}
