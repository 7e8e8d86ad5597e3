package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// handoverResult is one leader handover.
type handoverResult struct {
	// Duration runs from the request deleting the leader's pod (what a rollout of the controller's Deployment
	// does to it) until a new leader holds the lease and has reconciled a probe object changed once it held it.
	Duration      time.Duration `json:"duration"`
	LeaseDuration time.Duration `json:"leaseDuration"`
}

// handover deletes the workload-sizer's leader pod, as a rolling update of its Deployment does, and measures the
// leader handover with a probe sizer (made by ensureProbe) whose size is changed once a new leader holds the lease. The
// clock starts before the deletion request: the kubelet's SIGTERM comes later, and a clock started when the
// harness saw the pod terminating would leave out however long that took.
func handover(ctx context.Context, c client.Client, ns, releaseNS, name string, size int32) (handoverResult, error) {
	r := handoverResult{LeaseDuration: 15 * time.Second}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &lease); err != nil {
		return r, err
	}
	oldHolder := ptr.Deref(lease.Spec.HolderIdentity, "")
	oldPod, _, _ := strings.Cut(oldHolder, "_")
	if oldPod == "" {
		return r, fmt.Errorf("the lease %s/%s has no holder", releaseNS, name)
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		r.LeaseDuration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	start := time.Now()
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: oldPod}}); err != nil {
		return r, fmt.Errorf("deleting the leader %s: %w", oldPod, err)
	}
	// First a new leader: the probe is changed only once the lease has moved, so no write of the old leader, which
	// may still be running while its pod terminates, can be taken for the new one's.
	if err := poll(ctx, 5*time.Minute, func() (bool, error) {
		var l coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &l); err != nil {
			return false, err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != oldHolder, nil
	}); err != nil {
		return r, fmt.Errorf("no new leader took the lease: %w", err)
	}
	var probe sizerv1alpha1.WorkloadSizer
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe"}, &probe); err != nil {
		return r, err
	}
	pb := probe.DeepCopy()
	probe.Spec.Size = ptr.To(size)
	if err := c.Patch(ctx, &probe, client.MergeFrom(pb)); err != nil {
		return r, err
	}
	if err := poll(ctx, 5*time.Minute, func() (bool, error) {
		var target appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe"}, &target); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ptr.Deref(target.Spec.Replicas, 0) == size, nil
	}); err != nil {
		return r, fmt.Errorf("the new leader did not reconcile the probe: %w", err)
	}
	r.Duration = time.Since(start)
	// Wait until the ReplicaSet has replaced the pod, so the next handover starts from the same replicas.
	var d appsv1.Deployment
	return r, poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: name}, &d); err != nil {
			return false, err
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
			d.Status.AvailableReplicas == want && d.Status.Replicas == want, nil
	})
}

// ensureProbe makes the probe sizer the handover benchmark changes: it creates the Deployment "probe" (no pods:
// size 0) and keeps it at its size.
func ensureProbe(ctx context.Context, c client.Client, ns string) error {
	p := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: "probe"},
			Image: "registry.k8s.io/pause:3.10.2", Size: ptr.To[int32](0)}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, p)); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		var d appsv1.Deployment
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe"}, &d)
		return err == nil, client.IgnoreNotFound(err)
	})
}
