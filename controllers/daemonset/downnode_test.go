//go:build integration

package daemonset_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// runOn plays a kubelet for the one pod of agent on node (its full name) running image: started, Running and, as
// ready says, Ready. It waits for the pod to be there first.
func (s *scenario) runOn(node, image string, ready bool) {
	s.t.Helper()
	s.g.Eventually(func() error {
		for _, p := range s.pods(agent) {
			if nodeOf(&p) != node || p.Spec.Containers[0].Image != image {
				continue
			}
			if p.Status.StartTime == nil {
				p.Status.StartTime = &metav1.Time{Time: time.Now()}
			}
			return s.setPodPhase(&p, corev1.PodRunning, ready)
		}
		return errNotYet
	}, timeout, poll).Should(Succeed())
}

// A node that goes down after its pod was updated uses up the maxUnavailable budget, as apps/v1 and Kruise count it:
// the rollout stops there rather than taking a second node's pod down too. (A node that was down before the rollout
// reached it is passed over: TestPlanNodes.) Once the node is back, the rollout goes on.
func TestANodeDownAfterItsUpdateHoldsTheRollout(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", map[string]string{"canary": "true"})
	s.node("b", nil)
	s.node("c", nil)
	one := intstr.FromInt32(1)
	s.daemonSet(agent, "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
			RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one}}
	})
	a := s.label + "-a"
	s.kubelet(agent, "a") // node a's pods are run by hand below
	s.runOn(a, "agent:v1", true)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())

	// The update reaches node a alone (the canary selector), and its new pod runs.
	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Image = "agent:v2"
		ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	})
	s.runOn(a, "agent:v2", true)
	s.g.Eventually(func() []int32 {
		st := s.get(agent).Status
		return []int32{st.UpdatedNumberScheduled, st.NumberAvailable}
	}, timeout, poll).Should(Equal([]int32{1, 3}))
	kept := s.podsByNode()
	delete(kept, a)

	// Node a goes down, tainted and its pod unready as the node lifecycle controller leaves them, and the rollout is
	// let go on over every node.
	s.setNodeReady(a, false)
	s.g.Eventually(func() error {
		var n corev1.Node
		if err := env.Client.Get(s.ctx, client.ObjectKey{Name: a}, &n); err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule})
		return env.Client.Update(s.ctx, &n)
	}, timeout, poll).Should(Succeed())
	s.runOn(a, "agent:v2", false)
	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Selector = nil })
	s.g.Eventually(func() bool {
		ds := s.get(agent)
		return ds.Status.ObservedGeneration == ds.Generation
	}, timeout, poll).Should(BeTrue())
	others := func() map[string]types.UID {
		now := s.podsByNode()
		delete(now, a)
		return now
	}
	s.g.Consistently(others, 3*time.Second, poll).Should(Equal(kept), "a second node's pod was taken while node a, down after its update, used the budget")

	// Node a is back: the rollout goes on and completes.
	s.setNodeReady(a, true)
	s.runOn(a, "agent:v2", true)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	for _, p := range s.pods(agent) {
		s.g.Expect(p.Spec.Containers[0].Image).To(Equal("agent:v2"), "pod on %s", nodeOf(&p))
	}
}
