// Package poddiagnosis reads why a pod does not run, in the words the scheduler and the kubelet wrote in its
// status: a pod the scheduler cannot place, a container waiting for a reason that will not clear by itself, a
// container that keeps exiting. Each controller says what it makes of that (a DaemonSet's rollout failure, a
// Pipeline step's phase); this package only reads the pod, with no I/O.
package poddiagnosis

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Unschedulable is the scheduler's message for a pod it cannot place (its PodScheduled condition False for reason
// Unschedulable), and whether it has one.
func Unschedulable(p *corev1.Pod) (message string, ok bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

// Waiting is the first container of p (init containers first) waiting for one of reasons, and its waiting state;
// nil when none is.
func Waiting(p *corev1.Pod, reasons map[string]bool) (container string, w *corev1.ContainerStateWaiting) {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && reasons[w.Reason] {
				return cs.Name, w
			}
		}
	}
	return "", nil
}

// CrashWindow is how recent a container's last exit must be for a container that is not ready to count as crash
// looping. The kubelet restarts a crashing container after at most five minutes of back-off, so a crash loop exits
// again well within ten minutes (plus however long the container runs before it crashes); an exit older than that
// is history (an OOM kill an hour ago), and a container that is not ready now, long after it, is failing its
// readiness check, not crashing.
const CrashWindow = 10 * time.Minute

// CrashLooping names a container of p that keeps exiting, and its last exit; ok is false when none does. A crash
// loop passes through three states as the kubelet restarts the container (waiting in CrashLoopBackOff, running,
// terminated again), and only the first says so: judged from that instant alone, a controller would flip between
// failed and progressing on every restart. So a container also counts while it is not ready after its second
// restart or later, when its last exit is recent (CrashWindow). Any exit counts, a clean one too: a server that
// exits 0 is restarted like one that crashes. Init containers count the same way, except that one that finished
// (exit 0) is done, not crashing; a sidecar (an init container that restarts) is judged like a main one.
func CrashLooping(p *corev1.Pod, now time.Time) (container string, exit *corev1.ContainerStateTerminated, ok bool) {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				return cs.Name, LastExit(cs), true
			}
		}
	}
	for i, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Ready || cs.RestartCount < 2 {
				continue // one restart is not a loop: the first one comes without back-off, like a resize's
			}
			if t := cs.State.Terminated; i == 0 && t != nil && t.ExitCode == 0 && !Sidecar(p, cs.Name) {
				continue // an init container that finished
			}
			if e := LastExit(cs); e != nil && (e.FinishedAt.IsZero() || now.Sub(e.FinishedAt.Time) < CrashWindow) {
				return cs.Name, e, true
			}
		}
	}
	return "", nil, false
}

// LastExit is a container's latest exit: the one it is in, else the one before its current run.
func LastExit(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil {
		return t
	}
	return cs.LastTerminationState.Terminated
}

// Sidecar reports whether the pod's init container of that name restarts like a main container (restartPolicy
// Always): it is never "finished".
func Sidecar(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}
