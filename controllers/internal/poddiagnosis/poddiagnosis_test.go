package poddiagnosis

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func TestUnschedulable(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "not this one"},
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes"},
	}}}
	if msg, ok := Unschedulable(p); !ok || msg != "0/3 nodes" {
		t.Errorf("Unschedulable = %q, %v; want the scheduler's message", msg, ok)
	}
	p.Status.Conditions[1].Reason = "SchedulingGated"
	if msg, ok := Unschedulable(p); ok {
		t.Errorf("a gated pod is unschedulable: %q", msg)
	}
}

// Init containers are read first: a pod whose init container cannot pull its image names that one.
func TestWaitingReadsInitContainersFirst(t *testing.T) {
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	p := &corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{waiting("fetch", "ImagePullBackOff")},
		ContainerStatuses:     []corev1.ContainerStatus{waiting("server", "ImagePullBackOff")},
	}}
	if c, w := Waiting(p, map[string]bool{"ImagePullBackOff": true}); c != "fetch" || w == nil {
		t.Errorf("Waiting = %q, %v; want the init container", c, w)
	}
	if c, w := Waiting(p, map[string]bool{"CrashLoopBackOff": true}); c != "" || w != nil {
		t.Errorf("Waiting for another reason = %q, %v; want none", c, w)
	}
}

func TestCrashLooping(t *testing.T) {
	exited := func(code int32, ago time.Duration) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(now.Add(-ago))}
	}
	always := corev1.ContainerRestartPolicyAlways
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"waiting in CrashLoopBackOff": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}, "server"},
		"running, not ready, a recent second exit": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "server", RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: exited(1, time.Minute)}}}}}, "server"},
		"one restart is no loop": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "server", RestartCount: 1, LastTerminationState: corev1.ContainerState{Terminated: exited(1, time.Minute)}}}}}, ""},
		"an exit older than the window is history": {corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "server", RestartCount: 5, LastTerminationState: corev1.ContainerState{Terminated: exited(137, time.Hour)}}}}}, ""},
		"an init container that finished": {corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
			Name: "fetch", RestartCount: 2, State: corev1.ContainerState{Terminated: exited(0, time.Minute)}}}}}, ""},
		"a sidecar that exits 0 and is restarted": {corev1.Pod{
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "hold", RestartPolicy: &always}}},
			Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{
				Name: "hold", RestartCount: 2, State: corev1.ContainerState{Terminated: exited(0, time.Minute)}}}}}, "hold"},
	} {
		if got, _, ok := CrashLooping(&tc.pod, now); got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: CrashLooping = %q, want %q", name, got, tc.want)
		}
	}
}
