//go:build integration

package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// failing sets a failure policy of action on a rolling update of one node at a time, acting on the first failure.
func failing(action daemonsetv1alpha1.RolloutFailureAction) func(*daemonsetv1alpha1.DaemonSet) {
	return func(ds *daemonsetv1alpha1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one,
			FailurePolicy: &daemonsetv1alpha1.RolloutFailurePolicy{Action: action, MaxFailedNodes: &zero,
				ProgressDeadlineSeconds: ptr.To[int32](1)}}
	}
}

// imagesByNode maps each node to the image agent's pod runs there.
func (s *scenario) imagesByNode() map[string]string {
	out := map[string]string{}
	for _, p := range s.pods(agent) {
		out[nodeOf(&p)] = p.Spec.Containers[0].Image
	}
	return out
}

// rolledOutUnder rolls agent:v1 out on three nodes under a failure policy of action, and returns its revision.
func (s *scenario) rolledOutUnder(action daemonsetv1alpha1.RolloutFailureAction) string {
	s.t.Helper()
	startController(s.t)
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, nil)
	}
	s.daemonSet(agent, "agent:v1", failing(action))
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	return s.get(agent).Status.UpdateRevision
}

// A revision whose pods crash-loop, under failurePolicy Pause: the rollout stops at the first failed node, the other
// nodes keep their pods, a node that joins gets the revision that ran everywhere, and the status and an event say
// why. A fixed template rolls out and lifts the failure.
func TestFailurePolicyPausesABrokenRollout(t *testing.T) {
	s := newScenario(t)
	stable := s.rolledOutUnder(daemonsetv1alpha1.RolloutFailurePause)
	s.g.Eventually(func() string { return s.get(agent).Status.StableRevision }, timeout, poll).Should(Equal(stable))

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:crash" })
	s.g.Eventually(s.reasonOf(agent, daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonPaused))
	ds := s.get(agent)
	s.g.Expect(ds.Status.RolloutFailure).NotTo(BeNil())
	s.g.Expect(ds.Status.RolloutFailure.Action).To(Equal(daemonsetv1alpha1.RolloutFailurePause))
	s.g.Expect(ds.Status.RolloutFailure.Message).To(ContainSubstring("CrashLoopBackOff"))
	s.g.Expect(condition(ds, daemonsetv1alpha1.ConditionProgressing).Message).To(ContainSubstring(s.label + "-a"))
	s.g.Consistently(s.imagesByNode, "2s", poll).Should(Equal(map[string]string{
		s.label + "-a": "agent:crash", s.label + "-b": "agent:v1", s.label + "-c": "agent:v1"}), "the rollout went on")
	s.g.Eventually(s.eventReasons, timeout, poll).Should(ContainElement("RolloutPaused"))

	s.node("d", nil)
	s.g.Eventually(func() string { return s.imagesByNode()[s.label+"-d"] }, timeout, poll).Should(Equal("agent:v1"))

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	s.g.Expect(s.get(agent).Status.RolloutFailure).To(BeNil())
	for node, image := range s.imagesByNode() {
		s.g.Expect(image).To(Equal("agent:v2"), "node %s", node)
	}
}

// Under failurePolicy Rollback the crash-looping pods go back to the last revision that ran everywhere; the failed
// revision stays in the history, the status says what happened until the spec changes, and the rollout does not
// start again by itself.
func TestFailurePolicyRollsBackABrokenRollout(t *testing.T) {
	s := newScenario(t)
	stable := s.rolledOutUnder(daemonsetv1alpha1.RolloutFailureRollback)

	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:crash" })
	s.g.Eventually(s.reasonOf(agent, daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonRolledBack))
	everyNodeBack := map[string]string{s.label + "-a": "agent:v1", s.label + "-b": "agent:v1", s.label + "-c": "agent:v1"}
	s.g.Eventually(s.imagesByNode, timeout, poll).Should(Equal(everyNodeBack))
	s.g.Eventually(func() int32 { return s.get(agent).Status.NumberAvailable }, timeout, poll).Should(Equal(int32(3)))
	s.g.Consistently(s.imagesByNode, "2s", poll).Should(Equal(everyNodeBack), "the failed revision rolled out again")

	ds := s.get(agent)
	s.g.Expect(ds.Status.RolloutFailure).NotTo(BeNil())
	s.g.Expect(ds.Status.RolloutFailure.RolledBackTo).To(Equal(stable))
	s.g.Expect(ds.Status.UpdateRevision).To(Equal(stable))
	s.g.Expect(condition(ds, daemonsetv1alpha1.ConditionReady).Reason).To(Equal(daemonsetv1alpha1.ReasonRolledBack))
	s.g.Eventually(s.eventReasons, timeout, poll).Should(ContainElement("RolledBack"))
	var revs appsv1.ControllerRevisionList
	s.g.Expect(env.Client.List(s.ctx, &revs, client.InNamespace(s.ns))).To(Succeed())
	names := map[string]bool{}
	for _, r := range revs.Items {
		names[r.Name] = true
	}
	s.g.Expect(names).To(HaveKey(agent+"-"+ds.Status.RolloutFailure.Revision), "the failed revision was pruned")
}

// A rollback holds when the DaemonSet's status is lost while its template stays the failed one (a restore that does
// not restore status, an orphan delete and the same DaemonSet applied again): the failure is recorded on the failed
// revision too, the failed revision does not roll out again, and the status says so again. Once a new template rolls
// out, the record goes.
func TestARollbackHoldsWhenItsStatusIsLost(t *testing.T) {
	s := newScenario(t)
	s.rolledOutUnder(daemonsetv1alpha1.RolloutFailureRollback)
	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:crash" })
	everyNodeBack := map[string]string{s.label + "-a": "agent:v1", s.label + "-b": "agent:v1", s.label + "-c": "agent:v1"}
	s.g.Eventually(s.imagesByNode, timeout, poll).Should(Equal(everyNodeBack))
	failed := s.get(agent).Status.RolloutFailure.Revision
	record := func() string {
		var rev appsv1.ControllerRevision
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: agent + "-" + failed}, &rev)).To(Succeed())
		return rev.Annotations[daemonsetv1alpha1.RolloutFailureAnnotation]
	}
	s.g.Eventually(record, timeout, poll).Should(ContainSubstring(`"action":"Rollback"`))

	s.g.Eventually(func() error { // the controller writes the status too: try again on a conflict
		ds := s.get(agent)
		ds.Status = daemonsetv1alpha1.DaemonSetStatus{}
		return env.Client.Status().Update(s.ctx, ds)
	}, timeout, poll).Should(Succeed())
	s.g.Consistently(s.imagesByNode, "3s", poll).Should(Equal(everyNodeBack), "the failed revision rolled out again")
	s.g.Eventually(func() string {
		if f := s.get(agent).Status.RolloutFailure; f != nil {
			return f.Revision
		}
		return ""
	}, timeout, poll).Should(Equal(failed))
	s.g.Expect(s.reasonOf(agent, daemonsetv1alpha1.ConditionProgressing)()).To(Equal(daemonsetv1alpha1.ReasonRolledBack))

	// A fixed template, with a deadline no loaded test machine misses (a pod of it not ready within the policy's 1 s
	// would fail it too).
	s.update(agent, func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Image = "agent:v2"
		ds.Spec.UpdateStrategy.RollingUpdate.FailurePolicy.ProgressDeadlineSeconds = ptr.To[int32](60)
	})
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	s.g.Eventually(record, timeout, poll).Should(BeEmpty(), "the failure stayed recorded after a new template rolled out")
}
