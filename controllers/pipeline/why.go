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
// applies.
func podProblem(pods []corev1.Pod) (phase inferencev1alpha1.Phase, reason, message string) {
	if pod, w := waitingFor(pods, imagePullReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, ReasonImagePull, fmt.Sprintf("pod %s cannot pull its image (%s)%s: fix the image name or tag, or the pull secret",
			pod, w.Reason, detail(w.Message))
	}
	if pod, w := waitingFor(pods, configReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, ReasonContainerConfig, fmt.Sprintf("the kubelet cannot create the container of pod %s (%s)%s",
			pod, w.Reason, detail(w.Message))
	}
	if pod := crashLooping(pods); pod != "" {
		msg := fmt.Sprintf("the container of pod %s keeps failing", pod)
		if f := lastFailure(pods); f != nil {
			msg += fmt.Sprintf(" (exit code %d, %s)", f.ExitCode, f.Reason)
			if f.Message != "" {
				msg += ": " + f.Message
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

// crashLooping names a pod of the step whose container keeps failing, or "". A crash loop passes through three
// states as the kubelet restarts the container (waiting in CrashLoopBackOff, running, terminated again), and only
// the first says so: judged from that instant alone, the step would flip between Failed and Progressing on every
// restart. So a container also counts while it is not ready after a restart whose last run ended in an error; it
// stops counting once it is ready.
func crashLooping(pods []corev1.Pod) string {
	if pod, w := waitingFor(pods, map[string]bool{"CrashLoopBackOff": true}); w != nil {
		return pod
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !cs.Ready && cs.RestartCount > 0 && (failed(cs.LastTerminationState.Terminated) || failed(cs.State.Terminated)) {
				return p.Name
			}
		}
	}
	return ""
}

// failed reports whether a container's run ended in an error.
func failed(t *corev1.ContainerStateTerminated) bool { return t != nil && t.ExitCode != 0 }

// detail appends a message after a colon, or nothing when it is empty.
func detail(msg string) string {
	if msg = strings.TrimSpace(msg); msg != "" {
		return ": " + msg
	}
	return ""
}

// lastFailure is the latest error exit of a container of the pods, with its termination message.
func lastFailure(pods []corev1.Pod) *inferencev1alpha1.Failure {
	var best *inferencev1alpha1.Failure
	var at metav1.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
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
