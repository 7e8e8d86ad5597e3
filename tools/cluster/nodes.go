package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/keelson-dev/keelson/tools/internal/workers"
)

// Simulated nodes carry kwok's annotation (kwok manages only those), a pool label, and a NoSchedule taint so that
// only workloads that tolerate them land there: CoreDNS, the controllers and every ordinary pod stay on the real
// node.
const (
	fakeNodeAnnotation = "kwok.x-k8s.io/node"
	// FakeNodeLabel marks the simulated nodes `cluster-up` makes (e2e suites make their own with other names).
	FakeNodeLabel = "keelson.dev/fake-node"
	// FakeNodeTaintKey is the taint every simulated node carries.
	FakeNodeTaintKey = "kwok.x-k8s.io/node"
	fakeNodePrefix   = "kwok-node-"
)

var fakeNodeName = regexp.MustCompile(`^` + fakeNodePrefix + `(\d+)$`)

// FakeNode returns simulated node i: 32 CPUs, 256Gi, 110 pods, like a mid-size real node.
func FakeNode(i int) *corev1.Node {
	name := fakeNodePrefix + strconv.Itoa(i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{fakeNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"type": "kwok", FakeNodeLabel: "true",
			},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: FakeNodeTaintKey, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity, Phase: corev1.NodeRunning,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "fake"},
		},
	}
}

// FakeNodePlan returns, for the names of the existing pool nodes and the wanted count, the indexes to create and
// the names to delete: nodes kwok-node-0 … kwok-node-<want-1>, nothing else.
func FakeNodePlan(existing []string, want int) (create []int, remove []string) {
	have := map[int]bool{}
	for _, n := range existing {
		m := fakeNodeName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		if i >= want {
			remove = append(remove, n)
		} else {
			have[i] = true
		}
	}
	for i := range want {
		if !have[i] {
			create = append(create, i)
		}
	}
	return create, remove
}

// EnsureFakeNodes makes the pool hold exactly want simulated nodes, creating and deleting in parallel, and returns
// the names of the nodes it deleted.
func EnsureFakeNodes(ctx context.Context, cs kubernetes.Interface, want int, logf func(string, ...any)) (removed []string, err error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FakeNodeLabel + "=true"})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	create, remove := FakeNodePlan(names, want)
	if len(create)+len(remove) == 0 {
		return nil, nil
	}
	err = workers.Run(len(create)+len(remove), 16, func(i int) error {
		if i < len(create) {
			_, err := cs.CoreV1().Nodes().Create(ctx, FakeNode(create[i]), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}
		err := cs.CoreV1().Nodes().Delete(ctx, remove[i-len(create)], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return remove, fmt.Errorf("simulated nodes: %w", err)
	}
	logf("simulated nodes: %d created, %d deleted, %d in all", len(create), len(remove), want)
	return remove, nil
}

// kwokNodes are the names of the nodes kwok simulates: those with its annotation, the pool's and any other.
func kwokNodes(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range list.Items {
		if n.Annotations[fakeNodeAnnotation] == "fake" {
			names = append(names, n.Name)
		}
	}
	return names, nil
}

// deleteNodeLeases deletes the named nodes' leases; one already gone is no error.
func deleteNodeLeases(ctx context.Context, cs kubernetes.Interface, names []string) error {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	err := workers.Run(len(names), 16, func(i int) error {
		if err := leases.Delete(ctx, names[i], metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting node leases: %w", err)
	}
	return nil
}

// leasesRenewedSince reports whether each named node's lease exists and was renewed after since.
func leasesRenewedSince(ctx context.Context, cs kubernetes.Interface, names []string, since time.Time) (bool, error) {
	list, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	renewed := map[string]bool{}
	for _, l := range list.Items {
		if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since) {
			renewed[l.Name] = true
		}
	}
	for _, n := range names {
		if !renewed[n] {
			return false, nil
		}
	}
	return true, nil
}
