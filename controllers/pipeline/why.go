package pipeline

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// Waiting reasons of the kubelet that say a container cannot start until someone changes something.
var (
	imagePullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
		"ErrImageNeverPull": true}
	configReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true}
)

// podProblem says why a step's pods do not run, from what the kubelet and the scheduler wrote in their status, in
// order of what to fix first: an image that cannot be pulled, a container the kubelet cannot create, a container
// that keeps crashing (with its last termination message), a pod the scheduler cannot place (its PodScheduled=False
// message names the taint without a toleration, the missing free GPUs, the node affinity). It returns "" when none
// applies. now dates the containers' last exits (crashLooping).
func podProblem(pods []corev1.Pod, now time.Time) (phase inferencev1alpha1.Phase, reason, message string) {
	if pod, w := waitingFor(pods, imagePullReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, ReasonImagePull, fmt.Sprintf("pod %s cannot pull its image (%s)%s: fix the image name or tag, or the pull secret",
			pod, w.Reason, detail(w.Message))
	}
	if pod, w := waitingFor(pods, configReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, ReasonContainerConfig, fmt.Sprintf("the kubelet cannot create the container of pod %s (%s)%s",
			pod, w.Reason, detail(w.Message))
	}
	if pod, container, exit := crashLooping(pods, now); pod != "" {
		msg := fmt.Sprintf("container %s of pod %s keeps exiting", container, pod)
		if exit != nil {
			msg += fmt.Sprintf(" (exit code %d", exit.ExitCode)
			if exit.Reason != "" {
				msg += ", " + exit.Reason
			}
			msg += ")"
			if m := strings.TrimSpace(exit.Message); m != "" {
				msg += ": " + m
			}
		}
		return inferencev1alpha1.PhaseFailed, ReasonCrashLooping, msg
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return inferencev1alpha1.PhaseDegraded, ReasonUnschedulable, fmt.Sprintf("pod %s cannot be scheduled%s",
					p.Name, detail(c.Message))
			}
		}
	}
	return "", "", ""
}

// volumeReasons are the kubelet's and the attach controller's event reasons for a volume a pod cannot get: the
// share cannot be mounted, or a ReadWriteOnce claim is attached to another node (Multi-Attach error).
var volumeReasons = map[string]bool{ReasonFailedMount: true, ReasonFailedAttachVolume: true, ReasonFailedMapVolume: true}

// stuckCreating reports whether a pod is on a node but its containers have not started: what a volume that cannot
// be mounted looks like in a pod's status (the why is only in its events).
func stuckCreating(p corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
			return false
		}
	}
	return true
}

// volumeProblem says which volume a step's pods stuck in ContainerCreating cannot get, from the latest of their
// volume events (FailedMount, FailedAttachVolume, FailedMapVolume); "" when none.
func volumeProblem(pods []corev1.Pod, events []corev1.Event) (reason, message string) {
	stuck := map[string]string{}
	for _, p := range pods {
		if stuckCreating(p) {
			stuck[string(p.UID)] = p.Name
		}
	}
	var latest *corev1.Event
	for i := range events {
		e := &events[i]
		if _, ok := stuck[string(e.InvolvedObject.UID)]; !ok || !volumeReasons[e.Reason] {
			continue
		}
		if latest == nil || eventTime(latest).Before(eventTime(e)) {
			latest = e
		}
	}
	if latest == nil {
		return "", ""
	}
	return latest.Reason, fmt.Sprintf("pod %s cannot start: %s", stuck[string(latest.InvolvedObject.UID)], strings.TrimSpace(latest.Message))
}

// ReasonReadinessFailing means that a step's pods run, and their readiness check fails; the message is what the check
// answers (the kubelet's Unhealthy event). A model still loading answers so until it is loaded; a check that never
// passes ends as ProgressDeadlineExceeded.
const ReasonReadinessFailing = "ReadinessFailing"

// readinessGrace is how long a started container may be not ready before the step says what its readiness check
// answers: a few of its checks (readinessPeriodSeconds apart), so that the first failures of a server that is still
// opening its port do not count, and each pass during a rollout does not read events.
const readinessGrace = 20 * time.Second

// notReadySince is when the earliest main container of a pod that runs and is not ready started; zero when none
// is (or the pod is not running on its node).
func notReadySince(p corev1.Pod) time.Time {
	if !alive(p) || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
		return time.Time{}
	}
	var since time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if r := cs.State.Running; r != nil && !cs.Ready && (since.IsZero() || r.StartedAt.Time.Before(since)) {
			since = r.StartedAt.Time
			if since.IsZero() {
				since = p.CreationTimestamp.Time // a runtime that leaves startedAt out: the pod's age bounds it
			}
		}
	}
	return since
}

// unready reports whether a pod has run for readinessGrace without being ready: its readiness check fails.
func unready(p corev1.Pod, now time.Time) bool {
	since := notReadySince(p)
	return !since.IsZero() && now.Sub(since) >= readinessGrace
}

// readinessProblem says what the readiness check of a step's pods answers while one of them has run for
// readinessGrace without being ready: the latest of the kubelet's "Readiness probe failed" events (reason Unhealthy)
// on such a pod. "" when there is none, or no such event says so yet.
func readinessProblem(pods []corev1.Pod, events []corev1.Event, now time.Time) string {
	waiting := map[string]string{}
	for _, p := range pods {
		if unready(p, now) {
			waiting[string(p.UID)] = p.Name
		}
	}
	var latest *corev1.Event
	for i := range events {
		e := &events[i]
		if _, ok := waiting[string(e.InvolvedObject.UID)]; !ok || e.Reason != "Unhealthy" ||
			!strings.HasPrefix(e.Message, "Readiness probe") {
			continue
		}
		if latest == nil || eventTime(latest).Before(eventTime(e)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return fmt.Sprintf("pod %s runs and is not ready: %s", waiting[string(latest.InvolvedObject.UID)], strings.TrimSpace(latest.Message))
}

// eventTime is when an event last happened, whichever of its times its writer filled.
func eventTime(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// waitingFor finds a container of the pods waiting for one of reasons, and its pod's name.
func waitingFor(pods []corev1.Pod, reasons map[string]bool) (string, *corev1.ContainerStateWaiting) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, cs := range list {
				if w := cs.State.Waiting; w != nil && reasons[w.Reason] {
					return p.Name, w
				}
			}
		}
	}
	return "", nil
}

// crashWindow is how recent a container's last exit must be for a container that is not ready to count as crash
// looping. The kubelet restarts a crashing container after at most five minutes of back-off, so a crash loop exits
// again well within ten minutes (plus however long the container runs before it crashes); an exit older than that
// is history (an OOM kill an hour ago), and a container that is not ready now, long after it, is failing its
// readiness check, not crashing.
const crashWindow = 10 * time.Minute

// crashLooping names a container of the step's pods that keeps exiting, its pod, and its last exit; "" when none
// does. A crash loop passes through three states as the kubelet restarts the container (waiting in
// CrashLoopBackOff, running, terminated again), and only the first says so: judged from that instant alone, the
// step would flip between Failed and Progressing on every restart. So a container also counts while it is not
// ready after a restart, when its last exit is recent (crashWindow). Any exit counts, a clean one too: a server
// that exits 0 is restarted like one that crashes. Init containers count the same way, except that one that
// finished (exit 0) is done, not crashing; a sidecar (an init container that restarts) is judged like the main one.
func crashLooping(pods []corev1.Pod, now time.Time) (pod, container string, exit *corev1.ContainerStateTerminated) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, cs := range list {
				if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
					return p.Name, cs.Name, lastExit(cs)
				}
			}
		}
		for i, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, cs := range list {
				if cs.Ready || cs.RestartCount == 0 {
					continue
				}
				if t := cs.State.Terminated; i == 0 && t != nil && t.ExitCode == 0 && !sidecar(p, cs.Name) {
					continue // an init container that finished
				}
				if e := lastExit(cs); e != nil && (e.FinishedAt.IsZero() || now.Sub(e.FinishedAt.Time) < crashWindow) {
					return p.Name, cs.Name, e
				}
			}
		}
	}
	return "", "", nil
}

// lastExit is a container's latest exit: the one it is in, else the one before its current run.
func lastExit(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil {
		return t
	}
	return cs.LastTerminationState.Terminated
}

// sidecar reports whether the pod's init container of that name restarts like a main container (restartPolicy
// Always): it is never "finished".
func sidecar(p corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// detail appends a message after a colon, or nothing when it is empty.
func detail(msg string) string {
	if msg = strings.TrimSpace(msg); msg != "" {
		return ": " + msg
	}
	return ""
}

// lastFailure is the latest error exit of a container (init containers included) of the pods, with its termination
// message.
func lastFailure(pods []corev1.Pod) *inferencev1alpha1.Failure {
	var best *inferencev1alpha1.Failure
	var at metav1.Time
	for _, p := range pods {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t == nil || t.ExitCode == 0 || (best != nil && !at.Before(&t.FinishedAt)) {
					continue
				}
				best = &inferencev1alpha1.Failure{Container: cs.Name, ExitCode: t.ExitCode, Reason: t.Reason,
					Message: strings.TrimSpace(t.Message)}
				at = t.FinishedAt
			}
		}
	}
	return best
}
