package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestFakeNodePlan(t *testing.T) {
	create, remove := FakeNodePlan([]string{"kwok-node-0", "kwok-node-2", "kwok-node-5", "e2e-node-a"}, 4)
	if diff := cmp.Diff([]int{1, 3}, create); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kwok-node-5"}, remove); diff != "" {
		t.Errorf("remove: only pool nodes past the count (-want +got):\n%s", diff)
	}
	create, remove = FakeNodePlan([]string{"kwok-node-0", "kwok-node-1"}, 0)
	if len(create) != 0 || len(remove) != 2 {
		t.Errorf("scale to zero: create %v, remove %v", create, remove)
	}
}

// Simulated nodes are kwok's (annotation) and keep ordinary pods away (taint).
func TestFakeNode(t *testing.T) {
	n := FakeNode(7)
	if n.Name != "kwok-node-7" || n.Labels["kubernetes.io/hostname"] != "kwok-node-7" || n.Annotations[fakeNodeAnnotation] != "fake" {
		t.Fatalf("node %s: labels %v annotations %v", n.Name, n.Labels, n.Annotations)
	}
	want := []corev1.Taint{{Key: FakeNodeTaintKey, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(want, n.Spec.Taints); diff != "" {
		t.Fatalf("taints (-want +got):\n%s", diff)
	}
	if q := n.Status.Allocatable[corev1.ResourcePods]; q.Value() != 110 {
		t.Fatalf("allocatable pods %s", q.String())
	}
}

// A restart of kwok starts from fresh leases: the leases of the nodes deleted and of every node kwok simulates go
// (those of other nodes stay), and the restart is over once each simulated node's lease was renewed after it.
func TestKwokRestartStartsFromFreshLeases(t *testing.T) {
	ctx := context.Background()
	before, after := time.Now().Add(-time.Minute), time.Now().Add(time.Minute)
	lease := func(name string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	real := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "keelson-control-plane"}}
	cs := fake.NewClientset(FakeNode(0), FakeNode(1), FakeNode(2), real,
		lease("kwok-node-0", before), lease("kwok-node-1", before), lease("kwok-node-2", before), lease("keelson-control-plane", before))
	removed, err := EnsureFakeNodes(ctx, cs, 1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kwok-node-1", "kwok-node-2"}, removed); diff != "" {
		t.Fatalf("removed (-want +got):\n%s", diff)
	}
	simulated, err := kwokNodes(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kwok-node-0"}, simulated); diff != "" {
		t.Fatalf("simulated nodes (-want +got):\n%s", diff)
	}
	if err := deleteNodeLeases(ctx, cs, append(removed, simulated...)); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "keelson-control-plane" {
		t.Errorf("leases left: %v, want the real node's only", list.Items)
	}
	if err := deleteNodeLeases(ctx, cs, removed); err != nil {
		t.Errorf("leases already gone: %v", err)
	}
	renewed := func() bool {
		ok, err := leasesRenewedSince(ctx, cs, simulated, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if renewed() {
		t.Error("renewed with no lease")
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("kwok-node-0", before), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if renewed() {
		t.Error("renewed with a lease renewed before the restart")
	}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease("kwok-node-0", after), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !renewed() {
		t.Error("not renewed with a lease renewed after the restart")
	}
}
