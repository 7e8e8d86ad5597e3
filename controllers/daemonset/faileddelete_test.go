//go:build integration

package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A delete the apiserver refuses (here an admission policy keeping one pod) holds back nothing else of the pass: a
// node that joins while every pass retries the refused delete of a rolling update gets its pod within seconds, not
// never. Once the refusal is lifted, the rollout completes.
func TestARefusedDeleteHoldsBackNoOtherNode(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	// Two nodes may be unavailable at once: the new node without a pod yet is one, so every pass that creates its
	// pod also tries the refused delete again.
	two := intstr.FromInt32(2)
	s.daemonSet(agent, "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
			RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &two}}
	})
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	a := s.label + "-a"
	kept := s.podsByNode()[a]
	var pod corev1.Pod
	for _, p := range s.pods(agent) {
		pod = p
	}
	lift := keepPod(t, &pod)

	// The rollout deletes node a's old pod first, and the apiserver refuses it on every pass.
	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() bool {
		ds := s.get(agent)
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.UpdateRevision != ds.Status.CurrentRevision
	}, timeout, poll).Should(BeTrue())
	s.node("b", nil)
	b := s.label + "-b"
	s.g.Eventually(func() map[string]int { return s.podsPerNode(agent) }, timeout, poll).Should(HaveKeyWithValue(b, 1),
		"a refused delete held back the creation on a new node")
	s.g.Expect(s.podsByNode()).To(HaveKeyWithValue(a, kept), "the pod the apiserver keeps is gone")

	// Lifted, the refusal is retried at the pass an event brings (the refusals have backed the DaemonSet off): the
	// kept pod is touched once the apiserver lets it go.
	lift()
	// A pass already due may delete the pod first: gone is as good as touched.
	s.g.Eventually(func() error {
		return client.IgnoreNotFound(env.Client.Delete(s.ctx, pod.DeepCopy(), client.DryRunAll))
	}, timeout, poll).Should(Succeed())
	s.g.Expect(client.IgnoreNotFound(env.Client.Patch(s.ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"test/poke":"1"}}}`))))).To(Succeed())
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	for _, p := range s.pods(agent) {
		s.g.Expect(p.Spec.Containers[0].Image).To(Equal("agent:v2"), "pod on %s", nodeOf(&p))
	}
}
