package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// AdmissionResult is one admission scenario's run: a steady client creates objects of the controller's kind (a
// server-side dry run, which goes through the webhooks and stores nothing) while the controller's replicas die one
// at a time; every call that failed is counted.
type AdmissionResult struct {
	Scenario   string  `json:"scenario"`
	Controller string  `json:"controller"`
	Faults     []Fault `json:"faults"`
	// Calls is how many admission calls the client made, Failed how many of them failed, by cause.
	Calls  int            `json:"calls"`
	Failed map[string]int `json:"failed"`
	// Other is how many failed calls had a cause no replica's death explains (a denial, a certificate error).
	Other int `json:"other"`
	// ByFault is how many failed calls belong to each kind of fault (windowOf); those in no fault's window, under
	// "none".
	ByFault map[string]int `json:"byFault"`
	// Examples quotes a few failures.
	Examples []string `json:"examples,omitempty"`
	// GatedCalls is how many failed calls fail the run (gates), and Gated quotes the first few, each with when it
	// was sent: the line that fails a CI run says which they were.
	GatedCalls int           `json:"gatedCalls,omitempty"`
	Gated      []string      `json:"gated,omitempty"`
	Duration   time.Duration `json:"duration"`
}

// admissionPeriod is how often the steady client sends a create: ten a second.
const admissionPeriod = 100 * time.Millisecond

// admissionCallTimeout is the client's own deadline for one call, above the webhooks' timeoutSeconds (10 s), so a
// webhook that hangs shows as the apiserver's timeout, not the client's.
const admissionCallTimeout = 30 * time.Second

// admissionFaults are the ways one replica dies, in turn: its pod deleted (a rollout, a drain, an eviction), its
// processes killed (an OOM kill, a crash), and its processes frozen for admissionFreeze (a stalled node), then woken.
var admissionFaults = []Fault{FaultDelete, FaultKill, FaultStop}

// admissionFreeze is how long a frozen replica stays frozen: longer than its readiness probe takes to fail (three
// periods of 5 s), so the Service drops it before it wakes.
const admissionFreeze = 20 * time.Second

// steadyClient creates an object every admissionPeriod, each call on its own so that a hung one does not hold
// the next back, and keeps what each call answered.
type steadyClient struct {
	c      client.Client
	object func(i int) client.Object
	mu     sync.Mutex
	calls  int
	failed []failedCall
}

// failedCall is a call that failed: when it was sent, when its answer came, and what it was.
type failedCall struct {
	at, end time.Time
	err     error
}

// run sends calls until ctx ends, then waits for those in flight.
func (s *steadyClient) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(admissionPeriod)
	defer t.Stop()
	for i := 0; ; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); s.call(ctx, i) }()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// call sends one dry-run create.
func (s *steadyClient) call(ctx context.Context, i int) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), admissionCallTimeout)
	defer cancel()
	at := time.Now()
	err := s.c.Create(cctx, s.object(i), client.DryRunAll)
	end := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if err != nil {
		s.failed = append(s.failed, failedCall{at: at, end: end, err: err})
	}
}

// admissionCause sorts a failed call by what it says: the webhook's port refused the connection, the connection
// broke, or no answer came in time. The apiserver's message quotes the webhook's URL, which ends in
// "?timeout=10s": a bare "timeout" says nothing.
func admissionCause(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "http2: client connection lost") || strings.Contains(msg, "GOAWAY"):
		return "connection lost"
	case strings.Contains(msg, "context deadline exceeded") || strings.Contains(msg, "Client.Timeout exceeded") ||
		strings.Contains(msg, "i/o timeout") || strings.Contains(msg, "TLS handshake timeout") ||
		errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case strings.Contains(msg, "no endpoints available"):
		return "no endpoints"
	default:
		return "other"
	}
}

// faultWindow is the time a fault owns: from its injection until its replica was back and ready, and a second
// more. A failed call that overlaps it is the fault's; one outside every window fails the run.
type faultWindow struct {
	fault      Fault
	start, end time.Time
}

// windowSlack is how long before a fault a call may have been sent and still be that fault's: one in flight when
// the replica died. A call that hung for longer before a fault was not hung by it.
const windowSlack = time.Second

// brokenAfter bounds, for a call whose connection broke or was refused, how soon after a fault's start the break must
// come to be that fault's: a killed replica's connections break at once, and the Service routes new ones to it for
// a second or so more. brokenSentBefore bounds how long before the fault such a call may have been sent: the
// webhooks' timeoutSeconds, beyond which the apiserver would have given up on it already.
const (
	brokenAfter      = 5 * time.Second
	brokenSentBefore = 10 * time.Second
)

// windowOf returns the index of the window a failed call from at to end belongs to, or -1. A call whose connection
// broke or was refused (broken) belongs to the window whose fault broke it: the one that opened at most brokenAfter
// before the break, if the call was sent at most brokenSentBefore before that fault (a call the apiserver was slow to
// pass on, on a loaded host, fails the moment the death breaks its connection). Any other call belongs to the first
// window it overlaps, if sent at most windowSlack before it opened: a timeout sent earlier than that was held by
// something else first.
func windowOf(windows []faultWindow, at, end time.Time, broken bool) int {
	if broken {
		for k, w := range windows {
			if !end.Before(w.start) && end.Sub(w.start) <= brokenAfter && w.start.Sub(at) <= brokenSentBefore {
				return k
			}
		}
	}
	for k, w := range windows {
		if !at.After(w.end) && !end.Before(w.start) && w.start.Sub(at) <= windowSlack {
			return k
		}
	}
	return -1
}

// brokenConnection says whether a cause is a connection the webhook's replica broke or refused.
func brokenConnection(cause string) bool {
	return cause == "connection lost" || cause == "connection refused"
}

// admissionReplicaDeath runs the scenario for one controller: faults deaths of one replica at a time (the
// replicas in turn, so the one the apiserver happens to call is hit), each once the Deployment has all its
// replicas ready again, while the steady client runs.
func admissionReplicaDeath(ctx context.Context, in *injector, object func(i int) client.Object, r AdmissionResult, faults int, rng *rand.Rand) (AdmissionResult, error) {
	// Calls count from the moment every replica is ready: a replica still coming back from an earlier scenario's
	// fault is none of this one's, and a call it failed would sit in no fault's window and fail the run.
	if err := in.waitReplicas(ctx); err != nil {
		return r, fmt.Errorf("waiting for the controller's replicas before the first call: %w", err)
	}
	began := time.Now()
	s := &steadyClient{c: in.c, object: object}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.run(sctx) }()
	defer func() { stop(); <-done }()

	var windows []faultWindow
	for i := range faults {
		if err := in.waitReplicas(ctx); err != nil {
			return r, fmt.Errorf("waiting for the controller's replicas before fault %d: %w", i+1, err)
		}
		// A few seconds of calls between faults, in no fault's window: a call that fails then fails the run.
		if err := in.holdFor(ctx, time.Duration(2000+rng.IntN(2000))*time.Millisecond); err != nil {
			return r, err
		}
		fault := admissionFaults[i%len(admissionFaults)]
		pod, err := in.replica(ctx, i)
		if err != nil {
			return r, err
		}
		leader, _, err := in.leader(ctx)
		if err != nil {
			return r, err
		}
		w := faultWindow{fault: fault, start: time.Now()}
		if err := in.injectPod(ctx, fault, pod); err != nil {
			return r, fmt.Errorf("fault %d: %w", i+1, err)
		}
		if err := in.recover(ctx, fault, pod, pod.Name == leader); err != nil {
			return r, fmt.Errorf("fault %d (%s of %s): %w", i+1, fault, pod.Name, err)
		}
		if err := in.holdFor(ctx, time.Second); err != nil {
			return r, err
		}
		w.end = time.Now()
		windows = append(windows, w)
		r.Faults = append(r.Faults, fault)
		fmt.Printf("chaos: %s: fault %d/%d (%s of %s at %s, back after %s)\n", r.Scenario, i+1, faults, fault, pod.Name,
			w.start.UTC().Format("15:04:05.0"), seconds(w.end.Sub(w.start)))
	}
	if err := in.holdFor(ctx, 3*time.Second); err != nil {
		return r, err
	}
	stop()
	<-done
	r.Calls, r.Failed, r.ByFault = s.calls, map[string]int{}, map[string]int{}
	r.attribute(s.failed, windows)
	// A run whose client hardly got through says nothing about the webhooks.
	if r.Calls < 10*faults || r.failedCalls()*2 > r.Calls {
		return r, fmt.Errorf("%d of %d admission calls failed: the client did not get through enough to measure anything", r.failedCalls(), r.Calls)
	}
	r.Duration = time.Since(began)
	return r, nil
}

// attribute counts the failed calls by cause and by the fault whose window they were sent in ("none" outside every
// window), printing the first few of each fault and quoting some.
func (r *AdmissionResult) attribute(failed []failedCall, windows []faultWindow) {
	printed := map[int]int{}
	sort.Slice(failed, func(i, j int) bool { return failed[i].at.Before(failed[j].at) })
	for _, f := range failed {
		cause := admissionCause(f.err)
		r.Failed[cause]++
		after, k := "none", windowOf(windows, f.at, f.end, brokenConnection(cause))
		if k >= 0 {
			after = string(windows[k].fault)
		}
		if cause == "other" {
			r.Other++ // a denial, a certificate error, a 500: no replica's death explains it
		}
		r.ByFault[after]++
		if gates(after, cause) {
			if r.GatedCalls++; len(r.Gated) < maxExamples {
				r.Gated = append(r.Gated, gatedQuote(f, windows, k))
			}
		}
		if printed[k]++; printed[k] > 3 {
			continue // the first few of each fault say when they were sent; the counts say the rest
		}
		fmt.Printf("chaos:   failed call %s: %s\n", sentWhen(f.at, windows, k), cause)
		if len(r.Examples) < maxExamples {
			r.Examples = append(r.Examples, fmt.Sprintf("%s: %s", f.at.UTC().Format("15:04:05.0"), shortError(f.err)))
		}
	}
	for k, w := range windows {
		if printed[k] > 0 {
			fmt.Printf("chaos:   fault %d (%s of a replica): %d failed calls\n", k+1, w.fault, printed[k])
		}
	}
}

// gatedQuote says when a failed call that fails the run was sent, how long its answer took and what the apiserver
// answered.
func gatedQuote(f failedCall, windows []faultWindow, k int) string {
	return fmt.Sprintf("%s, answered %.1f s later: %s", sentWhen(f.at, windows, k), f.end.Sub(f.at).Seconds(), shortError(f.err))
}

// sentWhen says when a call sent at at was sent: how far into (or before) fault k, or, for k < 0, at what time, in no
// fault's window.
func sentWhen(at time.Time, windows []faultWindow, k int) string {
	if k < 0 {
		return "sent at " + at.UTC().Format("15:04:05.0") + " in no fault's window"
	}
	into := at.Sub(windows[k].start).Seconds()
	if into < 0 {
		return fmt.Sprintf("sent %.1f s before fault %d (%s)", -into, k+1, windows[k].fault)
	}
	return fmt.Sprintf("sent %.1f s into fault %d (%s)", into, k+1, windows[k].fault)
}

// shortError is err's message, cut at 300 bytes: the apiserver's quote of a webhook's URL and answer can run long.
func shortError(err error) string {
	msg := err.Error()
	if len(msg) > 300 {
		return msg[:300] + "…"
	}
	return msg
}

// gates says whether a failed call fails the run, by the fault whose window it was sent in ("none" for none) and
// its cause: one after a pod deletion (a rollout, a drain, an eviction: the replica drains its webhook server while
// the Service drops it, so no call may fail), one in no fault's window, and one whose cause no replica's death
// explains. A crash or a freeze fails the calls the apiserver had already sent to that replica, or sends it before
// its endpoint leaves (the apiserver does not retry an admission call): those are measured, not gated.
func gates(after, cause string) bool {
	return after == string(FaultDelete) || after == "none" || cause == "other"
}

// failedCalls is the number of failed calls of a result.
func (r AdmissionResult) failedCalls() int {
	n := 0
	for _, c := range r.Failed {
		n += c
	}
	return n
}

// admissionObject returns the object the steady client creates for a controller: valid, so that only a webhook
// that cannot answer makes the call fail.
func admissionObject(controller, ns string) (func(i int) client.Object, error) {
	// Everything is built anew for each call: the client decodes the answer into the object it sent, and calls run
	// side by side, so no map, slice or pointer may be shared between them.
	name := func(i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: fmt.Sprintf("admission-%d", i), Namespace: ns}
	}
	template := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"chaos": "admission"}},
			Spec: corev1.PodSpec{NodeSelector: maps.Clone(fakeNodeSelector), Tolerations: []corev1.Toleration{fakeNodeToleration},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10.2"}}}}
	}
	switch controller {
	case "daemonset-controller":
		return func(i int) client.Object {
			one := intstr.FromInt32(1)
			return &daemonsetv1alpha1.DaemonSet{ObjectMeta: name(i), Spec: daemonsetv1alpha1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"chaos": "admission"}}, Template: template(),
				UpdateStrategy: daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
					RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one}}}}
		}, nil
	case "workload-sizer":
		return func(i int) client.Object {
			t := template()
			return &sizerv1alpha1.WorkloadSizer{ObjectMeta: name(i), Spec: sizerv1alpha1.WorkloadSizerSpec{
				TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: fmt.Sprintf("admission-%d", i)},
				Template:  &t, Size: ptr.To(int32(2))}}
		}, nil
	case "pipeline-controller":
		return func(i int) client.Object {
			return &inferencev1alpha1.Pipeline{ObjectMeta: name(i), Spec: inferencev1alpha1.PipelineSpec{
				ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
					CSIParameter: map[string]string{"server": "nfs.chaos.invalid", "share": "/models"}},
				Steps: []inferencev1alpha1.Step{{Name: "detect", Image: "registry.k8s.io/pause:3.10.2", Model: "models/detect",
					Location: "kwok-node-0", Tolerations: []corev1.Toleration{fakeNodeToleration}}}}}
		}, nil
	}
	return nil, fmt.Errorf("no admission object for %q", controller)
}

// recover waits until the replica a fault hit is back: a deleted pod gone (its replacement is the Deployment's),
// a killed container restarted, a frozen one woken (and, if it led, restarted: it finds its lease taken and
// exits); then every replica of the Deployment ready.
func (in *injector) recover(ctx context.Context, fault Fault, pod *corev1.Pod, wasLeader bool) error {
	var err error
	switch fault {
	case FaultDelete:
		err = in.waitGone(ctx, pod)
	case FaultKill:
		err = in.waitRestarted(ctx, pod)
	case FaultStop:
		err = errors.Join(in.holdFor(ctx, admissionFreeze), in.wake(ctx, pod.UID))
		if err == nil && wasLeader {
			err = in.waitRestarted(ctx, pod)
		}
	}
	if err != nil {
		return err
	}
	return in.waitReplicas(ctx)
}
