//go:build integration

package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/daemonset"
)

// inPlace allows in-place updates, one node at a time.
func inPlace(ds *daemonsetv1alpha1.DaemonSet) {
	one := intstr.FromInt32(1)
	ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one,
		InPlace: daemonsetv1alpha1.InPlaceIfPossible}
}

// agent is the DaemonSet these tests roll out.
const agent = "agent"

// podsByNode maps each node to the UID of agent's pod on it.
func (s *scenario) podsByNode() map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range s.pods(agent) {
		out[nodeOf(&p)] = p.UID
	}
	return out
}

// podWrites counts the controller's writes to agent's pods as they are now.
func (s *scenario) podWrites(c *controller) int64 {
	var n int64
	for _, p := range s.pods(agent) {
		n += c.WritesTo(p.Name)
	}
	return n
}

// rolledOut reports whether every node runs an available pod of agent's current template.
func (s *scenario) rolledOut() bool {
	ds := s.get(agent)
	return ds.Status.ObservedGeneration == ds.Generation && ds.Status.UpdatedNumberScheduled == ds.Status.DesiredNumberScheduled &&
		condition(ds, daemonsetv1alpha1.ConditionReady) != nil && condition(ds, daemonsetv1alpha1.ConditionReady).Reason == daemonsetv1alpha1.ReasonAllNodesUpdated
}

// An image change is rolled out by patching the pods: each keeps its UID and node, runs the new image after one
// restart of its container, carries the new revision, and costs one write; no pod is created or deleted.
func TestImageChangeUpdatesPodsInPlace(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, nil)
	}
	s.daemonSet("agent", "agent:v1", inPlace)
	s.kubelet("agent")
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	before := s.podsByNode()
	s.g.Expect(before).To(HaveLen(3))
	creates, writesBefore := c.Creates.Load(), s.podWrites(c)

	s.update("agent", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Image = "agent:v2"
		ds.Spec.Template.Labels = map[string]string{"release": "v2"}
	})
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())

	ds := s.get("agent")
	s.g.Expect(s.podsByNode()).To(Equal(before), "pods were replaced, not updated in place")
	for _, p := range s.pods("agent") {
		s.g.Expect(p.Spec.Containers[0].Image).To(Equal("agent:v2"))
		s.g.Expect(p.Labels).To(HaveKeyWithValue(daemonset.RevisionLabel, ds.Status.UpdateRevision))
		s.g.Expect(p.Labels).To(HaveKeyWithValue("release", "v2"))
		s.g.Expect(p.Status.ContainerStatuses[0].RestartCount).To(Equal(int32(1)))
	}
	s.g.Expect(c.Creates.Load()-creates).To(Equal(int64(1)), "only the new ControllerRevision is created")
	// The kubelet's status writes are not through the controller's client: these are the controller's own, three per
	// pod: the readiness gate closed, the patch, the gate opened again once the container runs.
	// A write refused because this test's kubelet changed the pod meanwhile is counted too, and made again.
	s.g.Expect(s.podWrites(c)-writesBefore).To(BeNumerically(">=", 9), "writes to the pods")
	s.g.Expect(s.podWrites(c)-writesBefore).To(BeNumerically("<=", 12), "writes to the pods")
	for _, p := range s.pods(agent) {
		s.g.Expect(p.Spec.ReadinessGates).To(ContainElement(corev1.PodReadinessGate{ConditionType: daemonset.InPlaceReadyCondition}))
		s.g.Expect(p.Status.Conditions).To(ContainElement(And(HaveField("Type", daemonset.InPlaceReadyCondition),
			HaveField("Status", corev1.ConditionTrue))))
	}
	s.g.Eventually(s.eventReasons, timeout, poll).Should(ContainElement("SuccessfulUpdateInPlace"))
}

// Under in place, a change the running pod cannot take (here an environment variable) replaces the pod.
func TestChangeThatCannotBeMadeInPlaceReplacesThePod(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.daemonSet("agent", "agent:v1", inPlace)
	s.kubelet("agent")
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	before := s.podsByNode()

	s.update("agent", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Image = "agent:v2"
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", Value: "debug"}}
	})
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	after := s.podsByNode()
	s.g.Expect(after).To(HaveLen(1))
	s.g.Expect(after[s.label+"-a"]).NotTo(Equal(before[s.label+"-a"]), "the pod was patched, though its environment changed")
}

// Until its container runs the new image, a pod updated in place counts as not ready and not available, and the
// rollout does not move on to the next node.
func TestPodUpdatingInPlaceHoldsTheRollout(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet("agent", "agent:v1", inPlace)
	s.kubelet("agent", "b") // b's kubelet runs nothing after the first rollout: the test plays it until then
	s.g.Eventually(func() bool {
		for _, p := range s.pods("agent") {
			if nodeOf(&p) == s.label+"-b" {
				s.g.Expect(s.setPodPhase(&p, corev1.PodRunning, true)).To(Succeed())
			}
		}
		return s.rolledOut()
	}, timeout, poll).Should(BeTrue())

	s.update("agent", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	// Node a ("…-a" sorts first) is updated and restarts; b is patched next and never restarts its container.
	s.g.Eventually(func() int32 { return s.get("agent").Status.UpdatedNumberScheduled }, timeout, poll).Should(Equal(int32(2)))
	holding := func() bool {
		st := s.get("agent").Status
		return st.UpdatedNumberScheduled == 2 && st.NumberReady == 1 && st.NumberAvailable == 1 && st.NumberUnavailable == 1
	}
	s.g.Eventually(holding, timeout, poll).Should(BeTrue(), "a pod whose container has not restarted counts as ready or available")
	s.g.Consistently(holding, "1s", poll).Should(BeTrue(), "a pod whose container has not restarted became ready or available")
	s.g.Expect(s.reasonOf("agent", daemonsetv1alpha1.ConditionReady)()).NotTo(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
}

// With the readiness gate disabled, pods carry none, and an update in place is one patch per pod.
func TestInPlaceWithoutTheReadinessGate(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet(agent, "agent:v1", inPlace, func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.InPlaceReadinessGate = daemonsetv1alpha1.InPlaceReadinessGateDisabled
	})
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	before := s.podsByNode()
	writesBefore := s.podWrites(c)

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	s.g.Expect(s.podsByNode()).To(Equal(before), "pods were replaced, not updated in place")
	for _, p := range s.pods(agent) {
		s.g.Expect(p.Spec.ReadinessGates).To(BeEmpty())
		s.g.Expect(p.Spec.Containers[0].Image).To(Equal("agent:v2"))
	}
	// A patch refused because this test's kubelet changed the pod meanwhile is counted too, and made again.
	s.g.Expect(s.podWrites(c) - writesBefore).To(BeNumerically(">=", 2))
	s.g.Expect(s.podWrites(c) - writesBefore).To(BeNumerically("<=", 4))
}

// A change of the template's labels alone restarts no container: the pods are patched with their new labels, keep
// their readiness gate open (they never leave their Services) and cost one write each.
func TestLabelOnlyChangeKeepsTheGateOpen(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet(agent, "agent:v1", inPlace)
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	before := s.podsByNode()
	gateSince := map[string]string{}
	for _, p := range s.pods(agent) {
		for _, cond := range p.Status.Conditions {
			if cond.Type == daemonset.InPlaceReadyCondition {
				gateSince[p.Name] = cond.LastTransitionTime.String()
			}
		}
	}
	s.g.Expect(gateSince).To(HaveLen(2))
	writesBefore := s.podWrites(c)

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"team": "net"} })
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	s.g.Expect(s.podsByNode()).To(Equal(before), "pods were replaced, not updated in place")
	for _, p := range s.pods(agent) {
		s.g.Expect(p.Labels).To(HaveKeyWithValue("team", "net"))
		for _, cond := range p.Status.Conditions {
			if cond.Type == daemonset.InPlaceReadyCondition {
				s.g.Expect(cond.Status).To(Equal(corev1.ConditionTrue))
				s.g.Expect(cond.LastTransitionTime.String()).To(Equal(gateSince[p.Name]), "the gate of pod %s closed and opened again", p.Name)
			}
		}
	}
	s.g.Expect(s.podWrites(c)-writesBefore).To(BeNumerically("<=", 2+1), "one patch per pod (and at most one conflict)")
}

// eventReasons lists the reasons of the events in the scenario's namespace.
func (s *scenario) eventReasons() []string {
	var events eventsv1.EventList
	s.g.Expect(env.Client.List(s.ctx, &events, client.InNamespace(s.ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}
