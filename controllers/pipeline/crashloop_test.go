package pipeline

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A crash-looping container is a crash loop in each state the kubelet cycles it through, not only while it waits
// in CrashLoopBackOff; once it runs ready, it no longer is.
func TestCrashLoopIsStableAcrossRestarts(t *testing.T) {
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "model dir not found", FinishedAt: metav1.Now()}}
	pod := func(cs corev1.ContainerStatus) []corev1.Pod {
		cs.Name = "server"
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p-a-1"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}}}
	}
	for name, tc := range map[string]struct {
		pods       []corev1.Pod
		crashLoops bool
	}{
		"waiting in CrashLoopBackOff": {pod(corev1.ContainerStatus{RestartCount: 3, LastTerminationState: crashed,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}), true},
		"restarted, running, not ready": {pod(corev1.ContainerStatus{RestartCount: 4, LastTerminationState: crashed,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), true},
		"terminated again": {pod(corev1.ContainerStatus{RestartCount: 4, LastTerminationState: crashed, State: crashed}), true},
		"recovered: running and ready": {pod(corev1.ContainerStatus{RestartCount: 4, Ready: true, LastTerminationState: crashed,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), false},
		"first start, not ready yet": {pod(corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), false},
		"restarted after a clean exit": {pod(corev1.ContainerStatus{RestartCount: 1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}},
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), false},
	} {
		t.Run(name, func(t *testing.T) {
			phase, reason, msg := podProblem(tc.pods)
			if got := reason == ReasonCrashLooping; got != tc.crashLoops {
				t.Fatalf("reason %q (%s), want a crash loop: %v", reason, msg, tc.crashLoops)
			}
			if tc.crashLoops && phase != inferencev1alpha1.PhaseFailed {
				t.Errorf("phase %s, want Failed", phase)
			}
		})
	}
}
