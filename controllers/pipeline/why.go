package pipeline

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/poddiagnosis"
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
// message says a taint is not tolerated, which free GPUs are missing, the node affinity). It returns "" when none
// applies. now dates the containers' last exits (crashLooping).
func podProblem(pods []corev1.Pod, now time.Time) (phase inferencev1alpha1.Phase, reason, message string) {
	if pod, w := waitingFor(pods, imagePullReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonImagePull, fmt.Sprintf("pod %s cannot pull its image (%s)%s: fix the image name or tag, or the pull secret",
			pod, w.Reason, detail(w.Message))
	}
	if pod, w := waitingFor(pods, configReasons); w != nil {
		return inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonContainerConfig, fmt.Sprintf("the kubelet cannot create the container of pod %s (%s)%s",
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
		return inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonCrashLooping, msg
	}
	for i := range pods {
		if pods[i].DeletionTimestamp != nil || pods[i].Spec.NodeName != "" {
			continue
		}
		if message, ok := poddiagnosis.Unschedulable(&pods[i]); ok {
			return inferencev1alpha1.PhaseDegraded, inferencev1alpha1.ReasonUnschedulable, fmt.Sprintf("pod %s cannot be scheduled%s",
				pods[i].Name, detail(message))
		}
	}
	return "", "", ""
}

// volumeReasons are the kubelet's and the attach controller's event reasons for a volume a pod cannot get: the
// share cannot be mounted, or a ReadWriteOnce claim is attached to another node (Multi-Attach error).
var volumeReasons = map[string]bool{inferencev1alpha1.ReasonFailedMount: true, inferencev1alpha1.ReasonFailedAttachVolume: true, inferencev1alpha1.ReasonFailedMapVolume: true}

// stuckCreating reports whether a pod is on a node but none of its containers (init containers included) has
// started: what a volume that cannot be mounted looks like in a pod's status (the why is only in its events).
func stuckCreating(p corev1.Pod) bool {
	if !alive(p) || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodPending {
		return false
	}
	n := 0
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w == nil || (w.Reason != "ContainerCreating" && w.Reason != "PodInitializing") ||
				cs.LastTerminationState.Terminated != nil {
				return false
			}
			n++
		}
	}
	return n > 0
}

// olderFirst orders pods by creation, then name.
func olderFirst(a, b corev1.Pod) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// currentProblem is podProblem of the step's pods of the template it moves to (currentTemplate), else of its
// others: what the new pods meet is what the step waits for (a rollout that cannot go on keeps its old pod, with
// the old pod's trouble, which the user may just have fixed).
func currentProblem(pods []corev1.Pod, now time.Time) (phase inferencev1alpha1.Phase, reason, message string) {
	hash := currentTemplate(pods)
	var current, others []corev1.Pod
	for _, p := range pods {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			current = append(current, p)
		} else {
			others = append(others, p)
		}
	}
	if phase, reason, message = podProblem(current, now); reason != "" {
		return phase, reason, message
	}
	return podProblem(others, now)
}

// firstPod is the oldest of the step's pods that match (by creation, then name), or nil: every pass picks the same
// one, so what the step says of it does not change from pass to pass with the order the cache lists them in.
func firstPod(pods []corev1.Pod, match func(corev1.Pod) bool) *corev1.Pod {
	var first *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !match(*p) {
			continue
		}
		if first == nil || olderFirst(*p, *first) < 0 {
			first = p
		}
	}
	return first
}

// volumeRank orders volume events by how much they say: the attach controller's Multi-Attach error and a failed
// mount's own message come before the kubelet's generic "Unable to attach or mount volumes: ... timed out", which it
// repeats every two minutes after the specific one (sent once) and which would otherwise win by being the latest.
func volumeRank(e *corev1.Event) int {
	switch {
	case e.Reason == inferencev1alpha1.ReasonFailedAttachVolume || e.Reason == inferencev1alpha1.ReasonFailedMapVolume:
		return 2
	case strings.HasPrefix(e.Message, "Unable to attach or mount volumes"):
		return 0
	default:
		return 1
	}
}

// volumeProblem says which volume the step's first pod stuck in ContainerCreating cannot get, from its most telling
// volume event (volumeRank), the latest of those; "" when none.
func volumeProblem(pods []corev1.Pod, events []corev1.Event) (reason, message string) {
	pod := firstPod(pods, stuckCreating)
	if pod == nil {
		return "", ""
	}
	var best *corev1.Event
	for i := range events {
		e := &events[i]
		if e.InvolvedObject.UID != pod.UID || !volumeReasons[e.Reason] {
			continue
		}
		if best == nil || volumeRank(e) > volumeRank(best) || volumeRank(e) == volumeRank(best) && eventTime(best).Before(eventTime(e)) {
			best = e
		}
	}
	if best == nil {
		return "", ""
	}
	return best.Reason, fmt.Sprintf("pod %s cannot start: %s", pod.Name, strings.TrimSpace(best.Message))
}

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

// combinedPrefix is what the kubelet's event recorder puts before a message once it folds more than ten different
// messages of one reason into one event.
const combinedPrefix = "(combined from similar events): "

// readinessProblem says what the readiness check of the step's first pod that has run for readinessGrace without
// being ready answers: the latest of the kubelet's "Readiness probe ..." events (reason Unhealthy) on it since its
// container started (an answer to an earlier run is not this one's). "" when there is none, or no such event yet.
func readinessProblem(pods []corev1.Pod, events []corev1.Event, now time.Time) string {
	pod := firstPod(pods, func(p corev1.Pod) bool { return unready(p, now) })
	if pod == nil {
		return ""
	}
	since := notReadySince(*pod)
	var latest *corev1.Event
	for i := range events {
		e := &events[i]
		msg := strings.TrimPrefix(e.Message, combinedPrefix)
		if e.InvolvedObject.UID != pod.UID || e.Reason != "Unhealthy" || !strings.HasPrefix(msg, "Readiness probe") ||
			eventTime(e).Before(since) {
			continue
		}
		if latest == nil || eventTime(latest).Before(eventTime(e)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return fmt.Sprintf("pod %s runs and is not ready: %s", pod.Name, strings.TrimSpace(strings.TrimPrefix(latest.Message, combinedPrefix)))
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
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		if _, w := poddiagnosis.Waiting(&pods[i], reasons); w != nil {
			return pods[i].Name, w
		}
	}
	return "", nil
}

// crashLooping names a container of the step's pods that keeps exiting (poddiagnosis.CrashLooping), its pod, and
// its last exit; "" when none does. Pods that are going or gone are left out: an evicted pod keeps the statuses of
// its containers, and its replacement is what runs.
func crashLooping(pods []corev1.Pod, now time.Time) (pod, container string, exit *corev1.ContainerStateTerminated) {
	for i := range pods {
		if !alive(pods[i]) {
			continue
		}
		if container, exit, ok := poddiagnosis.CrashLooping(&pods[i], now); ok {
			return pods[i].Name, container, exit
		}
	}
	return "", "", nil
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

// alive reports whether a pod is neither going away nor finished.
func alive(p corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// currentTemplate is the pod-template-hash of the step's newest live pod ("" when there is none): a rollout
// creates only pods of the new template (and a rollback only pods of the one it goes back to), so the newest pod is
// of the template the Deployment is moving to. Read from the pods, it needs no ReplicaSets and no copy of the
// Deployment controller's hash.
func currentTemplate(pods []corev1.Pod) string {
	var newest *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !alive(*p) {
			continue
		}
		if newest == nil || olderFirst(*newest, *p) < 0 {
			newest = p
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}
