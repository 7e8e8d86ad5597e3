//go:build integration

package testenv_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every kind of write a controller can make is counted once: create, update, patch, apply, status apply,
// subresource create, delete, delete-collection, and an event recorded through the manager's recorder.
func TestCountsEveryWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "counting")
	var (
		c        client.Client
		recorder events.EventRecorder
	)
	_, counts := env.StartCountedManager(t, cache.Options{}, func(client.Object) bool { return false },
		func(mgr ctrl.Manager, cl client.Client) error {
			c, recorder = cl, mgr.GetEventRecorder("counting-test")
			return nil
		})
	expect := func(what string, want int64, do func() error) {
		t.Helper()
		before := counts.Writes.Load()
		g.Expect(do()).To(Succeed(), what)
		g.Expect(counts.Writes.Load()-before).To(Equal(want), what)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: ns}}
	expect("create", 1, func() error { return c.Create(ctx, cm) })
	g.Expect(counts.Creates.Load()).To(Equal(int64(1)))
	expect("update", 1, func() error { cm.Data = map[string]string{"a": "1"}; return c.Update(ctx, cm) })
	expect("patch", 1, func() error {
		return c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"b":"2"}}`)))
	})
	expect("apply", 1, func() error {
		return c.Apply(ctx, corev1ac.ConfigMap("counted", ns).WithData(map[string]string{"c": "3"}), client.FieldOwner("t"), client.ForceOwnership)
	})
	g.Expect(counts.WritesTo("counted")).To(Equal(int64(4)), "writes by name")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "counted-pod", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	expect("status apply", 1, func() error {
		return c.Status().Apply(ctx, corev1ac.Pod("counted-pod", ns).WithStatus(corev1ac.PodStatus().WithMessage("counted")),
			client.FieldOwner("t"), client.ForceOwnership)
	})
	g.Expect(counts.WritesTo("counted-pod")).To(Equal(int64(1)), "a subresource write counts for its object")

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "counted-sa", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, sa)).To(Succeed())
	expect("subresource create", 1, func() error {
		return c.SubResource("token").Create(ctx, sa, &authenticationv1.TokenRequest{})
	})
	expect("delete", 1, func() error { return c.Delete(ctx, cm) })
	expect("delete-collection", 1, func() error { return c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)) })

	// Events are sent by the recorder in the background: wait for the one write they make.
	before := counts.Writes.Load()
	recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Counted", "Count", "counted")
	g.Eventually(counts.Writes.Load, 10*time.Second, 20*time.Millisecond).Should(Equal(before+1), "the event was not counted")
	g.Consistently(counts.Writes.Load, time.Second, 20*time.Millisecond).Should(Equal(before+1), "the event was counted twice")
}
