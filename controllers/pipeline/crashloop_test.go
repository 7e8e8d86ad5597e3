package pipeline

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A crash-looping container is a crash loop in each state the kubelet cycles it through, not only while it waits
// in CrashLoopBackOff; once it runs ready, it no longer is. An exit long ago is history, a clean exit of a server
// is a crash, and init containers count (one that finished does not).
func TestCrashLoopIsStableAcrossRestarts(t *testing.T) {
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "model dir not found", FinishedAt: metav1.Now()}}
	now := time.Now()
	oomLongAgo := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
		FinishedAt: metav1.NewTime(now.Add(-time.Hour))}}
	pod := func(cs corev1.ContainerStatus) []corev1.Pod {
		cs.Name = "server"
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p-a-1"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}}}
	}
	evicted := func(cs corev1.ContainerStatus) []corev1.Pod {
		pods := pod(cs)
		pods[0].Status.Phase, pods[0].Status.Reason = corev1.PodFailed, "Evicted"
		return pods
	}
	initPod := func(cs corev1.ContainerStatus, restart *corev1.ContainerRestartPolicy) []corev1.Pod {
		cs.Name = "fetch"
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p-a-1"},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "fetch", RestartPolicy: restart}}},
			Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{cs}, ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}}}
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
		"restarted after a clean exit: a server that exits 0 is restarted like one that crashes": {pod(corev1.ContainerStatus{RestartCount: 2,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				FinishedAt: metav1.NewTime(now.Add(-time.Minute))}},
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), true},
		"restarted once: not a loop yet": {pod(corev1.ContainerStatus{RestartCount: 1, LastTerminationState: crashed,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}), false},
		"an evicted pod that had crashed": {evicted(corev1.ContainerStatus{RestartCount: 3, LastTerminationState: crashed,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, FinishedAt: metav1.NewTime(now)}}}), false},
		"OOM-killed an hour ago, now failing its readiness check": {pod(corev1.ContainerStatus{RestartCount: 3, LastTerminationState: oomLongAgo,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-time.Hour))}}}), false},
		"an init container that keeps failing": {initPod(corev1.ContainerStatus{RestartCount: 2, LastTerminationState: crashed,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, nil), true},
		"an init container that finished after one failure": {initPod(corev1.ContainerStatus{RestartCount: 1, LastTerminationState: crashed,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now)}}}, nil), false},
		"a sidecar that exits 0 and is restarted": {initPod(corev1.ContainerStatus{RestartCount: 2,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now)}}},
			ptr.To(corev1.ContainerRestartPolicyAlways)), true},
		"an init container waiting in CrashLoopBackOff": {initPod(corev1.ContainerStatus{RestartCount: 3, LastTerminationState: crashed,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}, nil), true},
	} {
		t.Run(name, func(t *testing.T) {
			phase, reason, msg := podProblem(tc.pods, now)
			if got := reason == inferencev1alpha1.ReasonCrashLooping; got != tc.crashLoops {
				t.Fatalf("reason %q (%s), want a crash loop: %v", reason, msg, tc.crashLoops)
			}
			if tc.crashLoops && phase != inferencev1alpha1.PhaseFailed {
				t.Errorf("phase %s, want Failed", phase)
			}
		})
	}
}

// A container that is not ready long after its last exit is failing its readiness check, and the step says what
// the check answers, from the kubelet's Unhealthy events of that pod; a pod that started moments ago is not judged.
func TestReadinessProblem(t *testing.T) {
	now := time.Now()
	running := func(uid string, started time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-a-" + uid, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}}
	}
	unhealthy := func(uid, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{UID: types.UID(uid)}, Reason: "Unhealthy", Message: msg,
			LastTimestamp: metav1.NewTime(at)}
	}
	old := running("1", now.Add(-time.Minute))
	fresh := running("2", now.Add(-5*time.Second))
	events := []corev1.Event{
		unhealthy("1", "Readiness probe failed: HTTP probe failed with statuscode: 500", now.Add(-30*time.Second)),
		unhealthy("1", "Readiness probe failed: HTTP probe failed with statuscode: 503", now.Add(-5*time.Second)),
		unhealthy("1", "Liveness probe failed: connection refused", now),
		unhealthy("2", "Readiness probe failed: connection refused", now),
	}
	if got := readinessProblem([]corev1.Pod{old, fresh}, events, now); got != "pod p-a-1 runs and is not ready: Readiness probe failed: HTTP probe failed with statuscode: 503" {
		t.Errorf("got %q: want the latest readiness answer of the pod that has waited", got)
	}
	if got := readinessProblem([]corev1.Pod{fresh}, events, now); got != "" {
		t.Errorf("a pod that started 5 s ago is not judged yet, got %q", got)
	}
	ready := old
	ready.Status.ContainerStatuses[0].Ready = true
	if got := readinessProblem([]corev1.Pod{ready}, events, now); got != "" {
		t.Errorf("a ready pod fails no check, got %q", got)
	}
}

// Of several pods that wait, the step speaks of the oldest, whatever order they are listed in; an answer the
// kubelet folded into a combined event counts, one from before the container's current run does not.
func TestReadinessProblemIsStable(t *testing.T) {
	now := time.Now()
	pod := func(name, uid string, created, started time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}}
	}
	older := pod("p-a-old", "1", now.Add(-10*time.Minute), now.Add(-2*time.Minute))
	newer := pod("p-a-new", "2", now.Add(-5*time.Minute), now.Add(-2*time.Minute))
	event := func(uid, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{UID: types.UID(uid)}, Reason: "Unhealthy", Message: msg,
			LastTimestamp: metav1.NewTime(at)}
	}
	events := []corev1.Event{
		event("1", "Readiness probe failed: an answer to the run before", now.Add(-3*time.Minute)),
		event("1", combinedPrefix+"Readiness probe failed: HTTP probe failed with statuscode: 503", now.Add(-time.Minute)),
		event("2", "Readiness probe failed: connection refused", now),
	}
	want := "pod p-a-old runs and is not ready: Readiness probe failed: HTTP probe failed with statuscode: 503"
	for _, pods := range [][]corev1.Pod{{older, newer}, {newer, older}} {
		if got := readinessProblem(pods, events, now); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got := readinessProblem([]corev1.Pod{older}, events[:1], now); got != "" {
		t.Errorf("an answer to the previous run is not this run's: got %q", got)
	}
}

// The attach controller's Multi-Attach error, sent once, stays the step's reason when the kubelet's generic mount
// timeout follows it every two minutes.
func TestVolumeProblemKeepsTheTellingEvent(t *testing.T) {
	now := time.Now()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-a-1", UID: "1"}, Spec: corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}
	event := func(reason, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{UID: "1"}, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at)}
	}
	events := []corev1.Event{
		event(inferencev1alpha1.ReasonFailedAttachVolume, `Multi-Attach error for volume "pvc-1" Volume is already used by pod(s) other`, now.Add(-5*time.Minute)),
		event(inferencev1alpha1.ReasonFailedMount, "Unable to attach or mount volumes: unmounted volumes=[models]: timed out waiting for the condition", now),
	}
	reason, msg := volumeProblem([]corev1.Pod{pod}, events)
	if reason != inferencev1alpha1.ReasonFailedAttachVolume || !strings.Contains(msg, "Multi-Attach error") {
		t.Errorf("got %s: %s; want the Multi-Attach error", reason, msg)
	}
	withInit := pod
	withInit.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "istio-init",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	withInit.Status.ContainerStatuses[0].State.Waiting.Reason = "PodInitializing"
	if !stuckCreating(withInit) {
		t.Error("a pod whose init container cannot start for its volume is stuck too")
	}
}
