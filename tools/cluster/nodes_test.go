package main

import (
	"context"
	"testing"

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

// Shrinking the pool deletes the deleted nodes' leases and returns once they are gone, so that kwok, restarted
// next, learns none of them (a lease it kept made a node of the same name made later go NotReady): the leases of
// the nodes that stay, and of other nodes, are kept.
func TestShrinkingThePoolDeletesTheNodesLeases(t *testing.T) {
	ctx := context.Background()
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease}}
	}
	cs := fake.NewClientset(FakeNode(0), FakeNode(1), FakeNode(2),
		lease("kwok-node-0"), lease("kwok-node-1"), lease("kwok-node-2"), lease("keelson-control-plane"))
	removed, err := EnsureFakeNodes(ctx, cs, 1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kwok-node-1", "kwok-node-2"}, removed); diff != "" {
		t.Fatalf("removed (-want +got):\n%s", diff)
	}
	if err := deleteNodeLeases(ctx, cs, removed); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range list.Items {
		left = append(left, l.Name)
	}
	if diff := cmp.Diff([]string{"keelson-control-plane", "kwok-node-0"}, left); diff != "" {
		t.Errorf("leases left (-want +got):\n%s", diff)
	}
	if err := deleteNodeLeases(ctx, cs, removed); err != nil {
		t.Errorf("leases already gone: %v", err)
	}
}
