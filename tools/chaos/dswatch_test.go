package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The DaemonSet invariant counts a pod on its node from its spec (its affinity before it is bound), a terminating
// pod as still there, and a finished one as gone; with a budget, the nodes without an available pod are held to it.
func TestJudgePods(t *testing.T) {
	pinned := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name",
					Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}}
	}
	ready := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeName = nodeOfSpec(p)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	terminating := func(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &metav1.Time{}; return p }
	failed := func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodFailed; return p }
	of := func(pods ...*corev1.Pod) map[types.UID]*corev1.Pod {
		out := map[types.UID]*corev1.Pod{}
		for _, p := range pods {
			out[p.UID] = p
		}
		return out
	}
	nodes := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name string
		pods map[types.UID]*corev1.Pod
		want string // "" for none
	}{
		{"one ready pod a node", of(ready(pinned("pa", "a")), ready(pinned("pb", "b")), ready(pinned("pc", "c"))), ""},
		{"a new pod beside one stopping", of(terminating(ready(pinned("old", "a"))), pinned("new", "a"), ready(pinned("pb", "b")),
			ready(pinned("pc", "c"))), "node a holds 2 pods (new, old)"},
		{"a new pod beside a failed one", of(failed(ready(pinned("old", "a"))), pinned("new", "a"), ready(pinned("pb", "b")),
			ready(pinned("pc", "c"))), ""},
		{"two unbound pods pinned to one node", of(pinned("x", "b"), pinned("y", "b"), ready(pinned("pa", "a")), ready(pinned("pc", "c"))),
			"node b holds 2 pods (x, y)"},
		{"two nodes without an available pod, budget one", of(ready(pinned("pa", "a")), terminating(ready(pinned("pb", "b")))),
			"2 nodes without an available pod, more than maxUnavailable 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(judgePods(tc.pods, nodes, 1), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("judgePods = %q, want %q", got, tc.want)
			}
		})
	}
	if got := tenPercentOf(100); got != 10 {
		t.Errorf("10%% of 100 = %d", got)
	}
	if got := tenPercentOf(101); got != 11 {
		t.Errorf("10%% of 101 = %d, want 11 (rounded up)", got)
	}
}
