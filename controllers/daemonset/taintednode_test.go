//go:build integration

package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// taintNoSchedule adds an untolerated NoSchedule taint to node: its running pod stays, no new pod goes there.
func (s *scenario) taintNoSchedule(node string) {
	s.t.Helper()
	s.g.Eventually(func() error {
		var n corev1.Node
		if err := env.Client.Get(s.ctx, client.ObjectKey{Name: s.label + "-" + node}, &n); err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
		return env.Client.Update(s.ctx, &n)
	}, timeout, poll).Should(Succeed())
}

// A node tainted NoSchedule after its pod started keeps that pod through a rollout that replaces pods: it is not
// deleted (nothing could take its place), and the status says the rollout left it on its old revision, not that the
// rollout is complete. Allowing in-place updates then moves it to the new image, in place.
func TestRolloutOverANodeThatAdmitsNoNewPod(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet(agent, "agent:v1")
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	tainted := s.podsByNode()[s.label+"-b"]
	s.taintNoSchedule("b")

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(s.reasonOf(agent, daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonOldPodsKept))
	ds := s.get(agent)
	s.g.Expect(ds.Status.DesiredNumberScheduled).To(Equal(int32(1)))
	s.g.Expect(ds.Status.NumberMisscheduled).To(Equal(int32(1)))
	s.g.Expect(s.podsByNode()).To(HaveKeyWithValue(s.label+"-b", tainted), "the pod on the tainted node was deleted")
	for _, p := range s.pods(agent) {
		if nodeOf(&p) == s.label+"-b" {
			s.g.Expect(p.Spec.Containers[0].Image).To(Equal("agent:v1"))
		}
	}

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { inPlace(ds) })
	s.g.Eventually(func() string {
		for _, p := range s.pods(agent) {
			if nodeOf(&p) == s.label+"-b" && p.UID == tainted {
				return p.Spec.Containers[0].Image
			}
		}
		return "gone"
	}, timeout, poll).Should(Equal("agent:v2"))
	s.g.Eventually(s.reasonOf(agent, daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonComplete))
}
