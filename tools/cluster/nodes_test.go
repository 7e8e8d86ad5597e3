package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
