package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RestartCause is why a controller's container last stopped, as the kubelet and the container's own log tell it.
type RestartCause struct {
	Pod        string    `json:"pod"`
	ExitCode   int32     `json:"exitCode"`
	Reason     string    `json:"reason,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
	// StartedAt is when the stopped container had started: a start that could not reach the apiserver is judged by
	// it, since its first request may hang until the client gives up, well after the apiserver is back.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// LeaseLost says the stopped container's last log lines report its leader election lease lost: the one way a
	// control-plane outage may restart a controller (it cannot renew, gives the lease up and exits).
	LeaseLost bool `json:"leaseLost"`
	// Unreachable says its log shows it could not reach the apiserver at start (a container the kubelet restarted
	// while the apiserver was still down): the fault's doing too, inside the fault's window.
	Unreachable bool `json:"unreachable,omitempty"`
	// Unread says the restart could not be looked at: a container that restarted more than once since the last
	// count shows only its last stop.
	Unread bool `json:"unread,omitempty"`
}

// leaseLostLine is what controller-runtime's manager returns, and the binary logs, when the lease is lost.
const leaseLostLine = "leader election lost"

// logTail is how many of a stopped container's last log lines are read for its cause: the manager logs its shutdown
// after the error that stopped it.
const logTail = 200

// restartCauses reads, for each controller pod whose container restarted since counted (restarts by pod name), why
// it last stopped; it returns the causes by controller and the restarts by pod now.
func restartCauses(ctx context.Context, c client.Client, cs kubernetes.Interface, in map[string]*injector,
	counted map[string]int32) (map[string][]RestartCause, map[string]int32, error) {
	causes, now := map[string][]RestartCause{}, map[string]int32{}
	for _, name := range controllers {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: in[name].namespace, Name: in[name].deployment}, &d); err != nil {
			return nil, nil, err
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(in[name].namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return nil, nil, err
		}
		for _, p := range pods.Items {
			for _, st := range p.Status.ContainerStatuses {
				now[p.Name] += st.RestartCount
				more := st.RestartCount - counted[p.Name]
				if more <= 0 || st.LastTerminationState.Terminated == nil {
					continue
				}
				t := st.LastTerminationState.Terminated
				cause := RestartCause{Pod: p.Name, ExitCode: t.ExitCode, Reason: t.Reason, FinishedAt: t.FinishedAt.Time,
					StartedAt: t.StartedAt.Time}
				lines, err := previousLog(ctx, cs, p.Namespace, p.Name, st.Name)
				if err != nil {
					cause.Unread = true // the cause cannot be read: it excuses nothing
				}
				cause.LeaseLost = strings.Contains(lines, leaseLostLine)
				cause.Unreachable = !cause.LeaseLost && unreachable(setupFailure(lines))
				causes[name] = append(causes[name], cause)
				for range more - 1 {
					causes[name] = append(causes[name], RestartCause{Pod: p.Name, Unread: true})
				}
			}
		}
	}
	return causes, now, nil
}

// setupFailedLine is what the binary logs when it cannot build its manager (discovery of its API groups included).
const setupFailedLine = "Unable to set up the manager"

// setupFailure is the line of lines that says the binary could not set up its manager, or "": the one whose error
// tells why a start failed (a line before it, the start-up wait's, names the apiserver's errors whatever the cause).
func setupFailure(lines string) string {
	for _, line := range strings.Split(lines, "\n") {
		if strings.Contains(line, setupFailedLine) {
			return line
		}
	}
	return ""
}

// unreachable reports whether log lines say the apiserver could not be reached, or not as itself (a restarting
// apiserver answered the local cluster's Service address with a certificate not yet its own).
func unreachable(lines string) bool {
	for _, s := range []string{"connection refused", "the server is currently unable", "i/o timeout", "no route to host",
		"connection reset", "EOF", "failed to get server groups", "tls: ", "x509: "} {
		if strings.Contains(lines, s) {
			return true
		}
	}
	return false
}

// previousLog returns the last lines of a container's previous log.
func previousLog(ctx context.Context, cs kubernetes.Interface, ns, pod, container string) (string, error) {
	stream, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true,
		TailLines: ptr.To[int64](logTail)}).Stream(ctx)
	if err != nil {
		return "", fmt.Errorf("the previous log of %s: %w", pod, err)
	}
	defer func() { _ = stream.Close() }()
	var b strings.Builder
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String(), sc.Err()
}

// controllerRestarts sums the container restarts of each controller's current pods.
func controllerRestarts(ctx context.Context, c client.Client, in map[string]*injector) (map[string]int32, error) {
	out := map[string]int32{}
	for _, name := range controllers {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: in[name].namespace, Name: in[name].deployment}, &d); err != nil {
			return nil, err
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(in[name].namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return nil, err
		}
		if len(pods.Items) != int(ptr.Deref(d.Spec.Replicas, 1)) {
			return nil, fmt.Errorf("%s has %d pods, want %d: a pod was replaced, restarts cannot be counted", name,
				len(pods.Items), ptr.Deref(d.Spec.Replicas, 1))
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				out[name] += cs.RestartCount
			}
		}
	}
	return out, nil
}
