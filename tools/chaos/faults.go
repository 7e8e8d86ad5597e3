package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// Fault is one way a leader dies.
type Fault string

// The faults a leader-death scenario cycles through.
const (
	// FaultKill is SIGKILL of the leader's container processes: it writes nothing more, and its lease must expire
	// before another replica leads.
	FaultKill Fault = "sigkill"
	// FaultStop is SIGSTOP of the leader for longer than its lease, then SIGCONT: a frozen leader that wakes up after
	// another took over must not write.
	FaultStop Fault = "sigstop"
	// FaultDelete deletes the leader's pod, as a rollout of the controller or a drain does: it releases its lease
	// on the way out.
	FaultDelete Fault = "delete"
)

// faultCycle is the order faults are injected in: every kind early, so even a short run tries each; the frozen
// leader first, so that even the shortest run watches what it does once it wakes.
var faultCycle = []Fault{FaultStop, FaultKill, FaultDelete}

// injector injects faults into one controller of the chart's release on the local cluster.
type injector struct {
	c           client.Client
	clusterTool string
	clusterDir  string
	namespace   string
	// deployment is the controller's Deployment, also the name of its lease.
	deployment string
	// lease is how long the controller's lease lasts.
	lease time.Duration
}

// leader returns the lease's holder: the pod name (its identity up to the first "_") and the identity itself.
func (in *injector) leader(ctx context.Context) (pod, identity string, err error) {
	var l coordinationv1.Lease
	if err := in.c.Get(ctx, client.ObjectKey{Namespace: in.namespace, Name: in.deployment}, &l); err != nil {
		return "", "", fmt.Errorf("reading lease %s/%s: %w", in.namespace, in.deployment, err)
	}
	identity = ptr.Deref(l.Spec.HolderIdentity, "")
	if l.Spec.LeaseDurationSeconds != nil {
		in.lease = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	pod, _, _ = strings.Cut(identity, "_")
	return pod, identity, nil
}

// inject brings the current leader down with fault and returns once another replica holds the lease and, after a
// freeze, once the woken process has gone (it exits when it finds its lease lost; the kubelet restarts it), so the
// next fault meets a standby again. It says when the fault started and how long until the new leader held the
// lease. During a freeze, once the new leader holds the lease, it calls duringFreeze (when not nil): work asked then
// makes what the frozen leader had planned stale, so that a write it makes on waking shows.
func (in *injector) inject(ctx context.Context, fault Fault, duringFreeze func(context.Context) error) (start time.Time, handover time.Duration, err error) {
	pod, identity, err := in.leader(ctx)
	if err != nil {
		return time.Time{}, 0, err
	}
	if pod == "" {
		return time.Time{}, 0, fmt.Errorf("lease %s has no holder", in.deployment)
	}
	var p corev1.Pod
	if err := in.c.Get(ctx, client.ObjectKey{Namespace: in.namespace, Name: pod}, &p); err != nil {
		return time.Time{}, 0, fmt.Errorf("reading the leader's pod %s: %w", pod, err)
	}
	start = time.Now()
	if err := in.injectPod(ctx, fault, &p); err != nil {
		return start, 0, err
	}
	if err := in.waitNewLeader(ctx, identity); err != nil {
		return start, 0, err
	}
	handover = time.Since(start)
	if fault == FaultStop {
		// Frozen past its lease, then woken: what it does then is what the invariant watches.
		if duringFreeze != nil {
			err = duringFreeze(ctx)
		}
		err = errors.Join(err, in.holdFor(ctx, in.lease+5*time.Second-time.Since(start)), in.wake(ctx, p.UID))
		if err == nil {
			err = in.waitRestarted(ctx, &p)
		}
	}
	return start, handover, err
}

// injectPod brings one pod of the controller down with fault: signals its processes, or deletes it.
func (in *injector) injectPod(ctx context.Context, fault Fault, p *corev1.Pod) error {
	var err error
	switch fault {
	case FaultKill:
		err = in.signal(ctx, p.UID, "KILL")
	case FaultStop:
		err = in.signal(ctx, p.UID, "STOP")
	case FaultDelete:
		err = in.c.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	default:
		err = fmt.Errorf("unknown fault %q", fault)
	}
	if err != nil {
		return fmt.Errorf("%s of %s: %w", fault, p.Name, err)
	}
	return nil
}

// replica returns the controller's i-th ready pod (modulo their number), by name: successive i take the replicas
// in turn.
func (in *injector) replica(ctx context.Context, i int) (*corev1.Pod, error) {
	var d appsv1.Deployment
	if err := in.c.Get(ctx, client.ObjectKey{Namespace: in.namespace, Name: in.deployment}, &d); err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := in.c.List(ctx, &pods, client.InNamespace(in.namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return nil, err
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("no ready pod of %s", in.deployment)
	}
	sort.Slice(ready, func(a, b int) bool { return ready[a].Name < ready[b].Name })
	return &ready[i%len(ready)], nil
}

// waitRestarted waits until the pod's containers restarted (or the pod is gone): a woken leader exits once it finds
// its lease lost.
func (in *injector) waitRestarted(ctx context.Context, before *corev1.Pod) error {
	restarts := func(p *corev1.Pod) (n int32) {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
		return n
	}
	was := restarts(before)
	// As long as waitReplicas: the kubelet's restart back-off can keep a container down for five minutes.
	return wait.Poll(ctx, 500*time.Millisecond, 10*time.Minute, func() (bool, error) {
		var p corev1.Pod
		err := in.c.Get(ctx, client.ObjectKeyFromObject(before), &p)
		if apierrors.IsNotFound(err) || err == nil && (p.UID != before.UID || restarts(&p) > was) {
			return true, nil
		}
		return false, err
	})
}

// waitGone waits until a deleted pod is gone from the apiserver (its graceful termination over).
func (in *injector) waitGone(ctx context.Context, before *corev1.Pod) error {
	return wait.Poll(ctx, 500*time.Millisecond, 3*time.Minute, func() (bool, error) {
		var p corev1.Pod
		err := in.c.Get(ctx, client.ObjectKeyFromObject(before), &p)
		if apierrors.IsNotFound(err) || err == nil && p.UID != before.UID {
			return true, nil
		}
		return false, err
	})
}

// holdFor waits d (nothing to poll: a frozen process is the point), or until ctx ends.
func (in *injector) holdFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return sleepUntil(ctx, time.Now().Add(d))
}

// wake sends SIGCONT to a frozen pod, even when the run was interrupted meanwhile: a pod is never left frozen. A
// container its liveness probe had the kubelet kill meanwhile has nothing left to wake, and that is no error.
func (in *injector) wake(ctx context.Context, uid types.UID) error {
	err := in.signal(context.WithoutCancel(ctx), uid, "CONT")
	if err != nil && strings.Contains(err.Error(), "no container process") {
		return nil
	}
	return err
}

// signal sends sig to the container processes of the pod through the cluster tool, which finds them by the pod's
// cgroup: never by matching process names.
func (in *injector) signal(ctx context.Context, uid types.UID, sig string) error {
	out, err := exec.CommandContext(ctx, in.clusterTool, "signal-pod", "--dir", in.clusterDir, "--pod-uid", string(uid),
		"--signal", sig).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster signal-pod %s: %w: %s", sig, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// waitNewLeader waits until a holder other than old holds a lease it renewed after the change.
func (in *injector) waitNewLeader(ctx context.Context, old string) error {
	return wait.Poll(ctx, 100*time.Millisecond, 3*time.Minute, func() (bool, error) {
		_, identity, err := in.leader(ctx)
		return identity != "" && identity != old, err
	})
}

// waitReplicas waits until every replica of the controller's Deployment is ready again (a standby is there for the
// next fault), however long the kubelet's restart back-off keeps a killed container down.
func (in *injector) waitReplicas(ctx context.Context) error {
	return wait.Poll(ctx, 500*time.Millisecond, 10*time.Minute, func() (bool, error) {
		var d appsv1.Deployment
		if err := in.c.Get(ctx, client.ObjectKey{Namespace: in.namespace, Name: in.deployment}, &d); err != nil {
			return false, err
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		if d.Status.ReadyReplicas != want || d.Status.Replicas != want || d.Status.UpdatedReplicas != want {
			return false, nil
		}
		var pods corev1.PodList
		if err := in.c.List(ctx, &pods, client.InNamespace(in.namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		return int32(ready) == want, nil
	})
}
