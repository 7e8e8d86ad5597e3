//go:build integration

package daemonset_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/daemonset"
)

// The simplest form, spec.image only: one pod per eligible node, pinned by node affinity (never spec.nodeName),
// owned, labelled and tolerating what daemon pods tolerate; the status counts them exactly.
func TestOnePodPerEligibleNode(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.node("tainted", nil, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
	s.node("cordoned", nil, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
	ds := s.daemonSet("agent", "registry.example/agent:v1")

	s.g.Eventually(func() map[string]int { return s.podsPerNode("agent") }, timeout, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1, s.label + "-cordoned": 1,
	}))
	for _, p := range s.pods("agent") {
		s.g.Expect(p.Spec.NodeName).To(BeEmpty(), "placement is left to the scheduler")
		s.g.Expect(p.Spec.Containers).To(HaveLen(1))
		s.g.Expect(p.Spec.Containers[0].Name).To(Equal("app"))
		s.g.Expect(p.Spec.Containers[0].Image).To(Equal("registry.example/agent:v1"))
		s.g.Expect(p.Labels).To(HaveKeyWithValue(daemonsetv1alpha1.NameLabel, "agent"))
		s.g.Expect(p.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "keelson"))
		s.g.Expect(p.Labels).To(HaveKey(daemonset.RevisionLabel))
		s.g.Expect(metav1.IsControlledBy(&p, ds)).To(BeTrue())
		s.g.Expect(p.Spec.Tolerations).To(ContainElement(HaveField("Key", "node.kubernetes.io/not-ready")))
	}

	s.kubelet("agent")
	s.g.Eventually(func() daemonsetv1alpha1.DaemonSetStatus {
		st := s.get("agent").Status
		st.Conditions, st.UpdateRevision, st.CurrentRevision, st.StableRevision = nil, "", "", ""
		return st
	}, timeout, poll).Should(Equal(daemonsetv1alpha1.DaemonSetStatus{
		ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3,
		NumberAvailable: 3, UpdatedNumberScheduled: 3,
	}))
	got := s.get("agent")
	s.g.Expect(got.Status.UpdateRevision).To(Equal(s.pods("agent")[0].Labels[daemonset.RevisionLabel]))
	s.g.Expect(got.Status.CurrentRevision).To(Equal(got.Status.UpdateRevision))
	for typ, reason := range map[string]string{daemonsetv1alpha1.ConditionReady: daemonsetv1alpha1.ReasonAllNodesUpdated,
		daemonsetv1alpha1.ConditionAvailable: daemonsetv1alpha1.ReasonMinimumAvailable, daemonsetv1alpha1.ConditionProgressing: daemonsetv1alpha1.ReasonComplete} {
		c := condition(got, typ)
		s.g.Expect(c).NotTo(BeNil(), typ)
		s.g.Expect(c.Status).To(Equal(metav1.ConditionTrue), typ)
		s.g.Expect(c.Reason).To(Equal(reason), typ)
		s.g.Expect(c.ObservedGeneration).To(Equal(int64(1)), typ)
	}
}

// Nodes added, relabelled, tainted NoExecute and removed: pods follow.
func TestPodsFollowNodes(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", map[string]string{"role": "edge"})
	s.daemonSet("edge", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector["role"] = "edge"
	})
	s.g.Eventually(func() map[string]int { return s.podsPerNode("edge") }, timeout, poll).Should(HaveLen(1))

	b := s.node("b", map[string]string{"role": "edge"})
	c := s.node("c", map[string]string{"role": "edge"})
	s.g.Eventually(func() map[string]int { return s.podsPerNode("edge") }, timeout, poll).Should(HaveLen(3))

	// Relabelled out of the selector: misscheduled, deleted.
	s.g.Eventually(func() error {
		var n corev1.Node
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(b), &n); err != nil {
			return err
		}
		n.Labels["role"] = "core"
		return env.Client.Update(s.ctx, &n)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() map[string]int { return s.podsPerNode("edge") }, timeout, poll).ShouldNot(HaveKey(b.Name))
	s.g.Eventually(func() int32 { return s.get("edge").Status.DesiredNumberScheduled }, timeout, poll).Should(Equal(int32(2)))

	// Tainted NoExecute: the pod is evicted.
	s.g.Eventually(func() error {
		var n corev1.Node
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(c), &n); err != nil {
			return err
		}
		n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
		return env.Client.Update(s.ctx, &n)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() map[string]int { return s.podsPerNode("edge") }, timeout, poll).ShouldNot(HaveKey(c.Name))

	// Node removed: its pod goes too.
	s.g.Expect(env.Client.Delete(s.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.label + "-a"}})).To(Succeed())
	s.g.Eventually(func() map[string]int { return s.podsPerNode("edge") }, timeout, poll).Should(BeEmpty())
}

// A pod that fails is replaced after a backoff that doubles with each failure on its node (as apps/v1's), so a
// template that fails at once causes no create/delete hot loop; while a failed pod waits, nothing is written.
func TestFailedPodsAreReplacedWithBackoff(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node("a", nil)
	s.daemonSet("crashy", "agent:v1")
	s.g.Eventually(func() []corev1.Pod { return s.pods("crashy") }, timeout, poll).Should(HaveLen(1))

	// failAndWait fails the node's pod and returns how long it took to be replaced.
	failAndWait := func(whileWaiting func()) time.Duration {
		pod := s.pods("crashy")[0]
		s.g.Expect(s.setPodPhase(&pod, corev1.PodFailed, false)).To(Succeed())
		failedAt := time.Now()
		if whileWaiting != nil {
			whileWaiting()
		}
		s.g.Eventually(func() bool {
			ps := s.pods("crashy")
			return len(ps) == 1 && ps[0].Name != pod.Name
		}, timeout, 10*time.Millisecond).Should(BeTrue())
		return time.Since(failedAt)
	}
	first := failAndWait(nil)  // no backoff yet: replaced at once; the node's backoff is now 1s
	second := failAndWait(nil) // waits out the 1s started at the first deletion; now 2s
	third := failAndWait(func() {
		// Once the status reports the wait, the controller writes nothing until the backoff ends.
		s.g.Eventually(func() string { return condition(s.get("crashy"), daemonsetv1alpha1.ConditionReady).Message },
			timeout, poll).Should(ContainSubstring("failure backoff"))
		// The events of the failed pod's deletion may land just after the status: the wait starts once the writes
		// have settled.
		writes := int64(-1) // two equal counts 200ms apart: the first look never passes
		s.g.Eventually(func() bool {
			now := c.Writes.Load()
			settled := now == writes
			writes = now
			return settled
		}, timeout, 200*time.Millisecond).Should(BeTrue())
		s.g.Consistently(c.Writes.Load, 800*time.Millisecond, poll).Should(Equal(writes), "writes while a failed pod waits")
	})
	t.Logf("replaced after %s, %s, %s", first, second, third)
	s.g.Expect(first).To(BeNumerically("<", time.Second))
	s.g.Expect(third).To(BeNumerically(">", 1500*time.Millisecond), "the third failure waits about 2s")
	s.g.Expect(third).To(BeNumerically(">", second), "the backoff grows")
}

// A template change rolls out one node at a time with maxUnavailable 1: never two nodes without a pod.
func TestRollingUpdateMaxUnavailable(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.allUpdated("roll", "a", "b", "c", "d")
	oldRev := s.get("roll").Status.UpdateRevision

	s.update("roll", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	deadline := time.Now().Add(timeout)
	for {
		perNode := s.podsPerNode("roll")
		s.g.Expect(len(perNode)).To(BeNumerically(">=", 3), "more than maxUnavailable nodes lost their pod")
		for node, n := range perNode {
			s.g.Expect(n).To(Equal(1), "two pods on node %s without surge", node)
		}
		done := true
		for _, p := range s.pods("roll") {
			done = done && p.Spec.Containers[0].Image == "agent:v2" && p.Status.Phase == corev1.PodRunning
		}
		if done && len(perNode) == 4 {
			break
		}
		s.g.Expect(time.Now().Before(deadline)).To(BeTrue(), "rollout did not finish")
		time.Sleep(poll) // sampling the rollout's invariant, not waiting for it
	}
	s.g.Eventually(s.reasonOf("roll", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	ds := s.get("roll")
	s.g.Expect(ds.Status.UpdateRevision).NotTo(Equal(oldRev))
	s.g.Expect(ds.Status.UpdatedNumberScheduled).To(Equal(int32(4)))

	// Back to the old template: its revision (and hash) is reused, not recorded again.
	s.update("roll", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v1" })
	s.g.Eventually(func() string { return s.get("roll").Status.UpdateRevision }, timeout, poll).Should(Equal(oldRev))
	var revs appsv1.ControllerRevisionList
	s.g.Expect(env.Client.List(s.ctx, &revs, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(revs.Items).To(HaveLen(2))
}

// With maxSurge the new pod starts beside the old one; a node is never without a pod.
func TestRollingUpdateSurge(t *testing.T) {
	s := newScenario(t)
	startController(t)
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, nil)
	}
	s.daemonSet("surge", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}
	})
	s.slowKubelet("surge", time.Second) // new pods take a while, so the surge pairs are there to see
	s.g.Eventually(s.reasonOf("surge", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	oldRev := s.get("surge").Status.UpdateRevision

	s.update("surge", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() string { return s.get("surge").Status.UpdateRevision }, timeout, poll).ShouldNot(Equal(oldRev))
	sawSurge := false
	deadline := time.Now().Add(timeout)
	for {
		perNode := s.podsPerNode("surge")
		s.g.Expect(perNode).To(HaveLen(3), "a node lost its pod during a surge rollout")
		pairs := 0
		for _, n := range perNode {
			if n == 2 {
				pairs++
			}
		}
		s.g.Expect(pairs).To(BeNumerically("<=", 1), "more nodes surging than maxSurge")
		sawSurge = sawSurge || pairs == 1
		if s.get("surge").Status.UpdatedNumberScheduled == 3 && pairs == 0 {
			break
		}
		s.g.Expect(time.Now().Before(deadline)).To(BeTrue(), "rollout did not finish")
		time.Sleep(poll) // sampling the rollout's invariant, not waiting for it
	}
	s.g.Expect(sawSurge).To(BeTrue(), "no node ever ran the old and the new pod side by side")
}

// Partition, pause and the canary selector hold nodes back; the status says so.
func TestRolloutControls(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", map[string]string{"canary": "yes"})
	s.node("b", nil)
	s.node("c", nil)
	s.daemonSet("ctl", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromInt32(3)), Partition: ptr.To[int32](2)}
	})
	s.kubelet("ctl")
	s.g.Eventually(s.reasonOf("ctl", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	images := func() map[string]string {
		out := map[string]string{}
		for _, p := range s.pods("ctl") {
			out[strings.TrimPrefix(nodeOf(&p), s.label+"-")] = p.Spec.Containers[0].Image
		}
		return out
	}

	// Partition 2 of 3: only a (first by name) is updated; b and c are held back.
	s.update("ctl", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(images, timeout, poll).Should(Equal(map[string]string{"a": "agent:v2", "b": "agent:v1", "c": "agent:v1"}))
	s.g.Eventually(s.reasonOf("ctl", daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonComplete))
	s.g.Expect(condition(s.get("ctl"), daemonsetv1alpha1.ConditionProgressing).Message).To(ContainSubstring("2 nodes held back"))
	s.g.Consistently(images, time.Second, poll).Should(HaveKeyWithValue("c", "agent:v1"))

	// Paused: lowering the partition changes nothing until unpaused.
	s.update("ctl", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Paused = true
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = nil
	})
	s.g.Eventually(s.reasonOf("ctl", daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonPaused))
	s.g.Consistently(images, time.Second, poll).Should(HaveKeyWithValue("b", "agent:v1"))

	// Canary selector: unpaused, only nodes labelled canary=yes update to v3.
	s.update("ctl", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.Image = "agent:v3"
		ds.Spec.UpdateStrategy.RollingUpdate.Paused = false
		ds.Spec.UpdateStrategy.RollingUpdate.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "yes"}}
	})
	s.g.Eventually(images, timeout, poll).Should(Equal(map[string]string{"a": "agent:v3", "b": "agent:v1", "c": "agent:v1"}))
}

// OnDelete: a new template reaches a node only when its pod is deleted.
func TestOnDelete(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet("od", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy = daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.OnDeleteStrategyType}
	})
	s.kubelet("od")
	s.g.Eventually(s.reasonOf("od", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	s.update("od", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(s.reasonOf("od", daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonOnDelete))
	s.g.Consistently(func() []string {
		var out []string
		for _, p := range s.pods("od") {
			out = append(out, p.Spec.Containers[0].Image)
		}
		return out
	}, time.Second, poll).Should(Equal([]string{"agent:v1", "agent:v1"}))

	victim := s.pods("od")[0]
	s.g.Expect(env.Client.Delete(s.ctx, &victim)).To(Succeed())
	s.g.Eventually(func() map[string]string {
		out := map[string]string{}
		for _, p := range s.pods("od") {
			out[nodeOf(&p)] = p.Spec.Containers[0].Image
		}
		return out
	}, timeout, poll).Should(HaveKeyWithValue(nodeOf(&victim), "agent:v2"))
}

// A NotReady node neither stalls the rollout nor uses up maxUnavailable; a pod that cannot start is reported.
func TestRolloutPassesDeadNodesAndReportsStuckPods(t *testing.T) {
	s := newScenario(t)
	startController(t)
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, nil)
	}
	s.daemonSet("dead", "agent:v1")
	s.kubelet("dead", "a") // a's kubelet is dead: its pod never becomes ready
	s.g.Eventually(func() int32 { return s.get("dead").Status.NumberAvailable }, timeout, poll).Should(Equal(int32(2)))
	s.setNodeReady(s.label+"-a", false)

	s.update("dead", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() map[string]string {
		out := map[string]string{}
		for _, p := range s.pods("dead") {
			out[strings.TrimPrefix(nodeOf(&p), s.label+"-")] = p.Spec.Containers[0].Image
		}
		return out
	}, timeout, poll).Should(Equal(map[string]string{"a": "agent:v1", "b": "agent:v2", "c": "agent:v2"}))

	// A new pod that crash loops: the rollout is reported stuck, naming the node, the pod and the reason. The fake
	// kubelet may have reported the pod running first: the crash loop replaces that (and the kubelet leaves a pod
	// that is not ready and says why alone).
	s.update("dead", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v3-broken" })
	s.g.Eventually(func() error {
		for _, p := range s.pods("dead") {
			if p.Spec.Containers[0].Image != "agent:v3-broken" || p.DeletionTimestamp != nil {
				continue
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "agent:v3-broken",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
			return env.Client.Status().Update(s.ctx, &p)
		}
		return errNotYet
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(s.reasonOf("dead", daemonsetv1alpha1.ConditionProgressing), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonRolloutStuck))
	s.g.Expect(condition(s.get("dead"), daemonsetv1alpha1.ConditionProgressing).Message).To(ContainSubstring("CrashLoopBackOff"))
}

// errNotYet makes a poll try again.
var errNotYet = errors.New("not yet")

// A restarted (or newly elected) controller adopts the pods that exist instead of creating more, and in steady state
// it writes nothing even when woken up.
func TestRestartAdoptsAndSteadyStateWritesNothing(t *testing.T) {
	s := newScenario(t)
	for _, n := range []string{"a", "b", "c"} {
		s.node(n, nil)
	}
	s.daemonSet("steady", "agent:v1")
	s.kubelet("steady")

	first := startController(t)
	s.g.Eventually(s.reasonOf("steady", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	before := s.pods("steady")
	first.mgr.Stop()

	c := startController(t)
	s.g.Eventually(c.Gets.Load, timeout, poll).Should(BeNumerically(">", 0), "the new controller reconciled")
	s.g.Consistently(func() []string {
		var names []string
		for _, p := range s.pods("steady") {
			names = append(names, p.Name)
		}
		return names
	}, time.Second, poll).Should(Equal(podNames(before)))

	// Wake it up without changing anything it cares about: a node heartbeat and a pod annotation.
	writes, gets := c.Writes.Load(), c.Gets.Load()
	s.setNodeReady(s.label+"-a", true)
	p := s.pods("steady")[0]
	p.Annotations = map[string]string{"touched": "yes"}
	s.g.Expect(env.Client.Update(s.ctx, &p)).To(Succeed())
	s.g.Eventually(c.Gets.Load, timeout, poll).Should(BeNumerically(">", gets), "the pod update woke the controller")
	s.g.Consistently(c.Writes.Load, 2*time.Second, poll).Should(Equal(writes), "writes in steady state")
}

// podConditions returns the conditions of every pod.
func podConditions(pods []corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, p := range pods {
		out = append(out, p.Status.Conditions...)
	}
	return out
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// A pod counts as available only after minReadySeconds of readiness.
func TestMinReadySeconds(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.daemonSet("slow", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = 2 })
	s.kubelet("slow")
	// Measured from the pod's readiness as stored (its Ready condition's time, whole seconds, as the controller reads
	// it): the status follows it, paced while only counters move.
	var readySince time.Time
	s.g.Eventually(func() bool {
		pods := s.pods("slow")
		for _, c := range podConditions(pods) {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				readySince = c.LastTransitionTime.Time
				return true
			}
		}
		return false
	}, timeout, poll).Should(BeTrue())
	s.g.Expect(s.get("slow").Status.NumberAvailable).To(Equal(int32(0)), "available before minReadySeconds")
	s.g.Eventually(func() int32 { return s.get("slow").Status.NumberAvailable }, timeout, poll).Should(Equal(int32(1)))
	s.g.Expect(time.Since(readySince)).To(BeNumerically(">=", 2*time.Second), "available before minReadySeconds of readiness")
}

// When the apiserver rejects the pods (here an admission policy), creations go in slow-start batches: one
// attempt per retry, not one per node, the controller keeps retrying, and the rejection is reported as an event.
func TestRejectedPodsAreNotRetriedPerNode(t *testing.T) {
	s := newScenario(t)
	rejectPodsIn(t, s.ns)
	c := startController(t)
	for n := range 16 {
		s.node(fmt.Sprintf("n%d", n), nil)
	}
	before := c.Creates.Load()
	s.daemonSet("rejected", "agent:v1")
	created := time.Now()
	s.g.Eventually(func() bool {
		var events eventsv1.EventList
		_ = env.Client.List(s.ctx, &events, client.InNamespace(s.ns))
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.Contains(e.Note, "no pods here") {
				return true
			}
		}
		return false
	}, timeout, poll).Should(BeTrue(), "a FailedCreate event naming the rejection")

	// Count creation attempts over the first window seconds. Each failed pass is retried after the work queue's
	// per-object backoff (5 ms, doubling): about 11 passes in 4 s. With slow start a pass tries one pod, so about
	// 11 attempts; retried per node, one pass alone would try all 16 and exceed the upper bound. A controller that
	// gives up after the first failure, or retries only on events (about 3 attempts), stays under the lower bound.
	const window = 4 * time.Second
	s.g.Consistently(func() []corev1.Pod { return s.pods("rejected") }, time.Until(created.Add(window)), poll).Should(BeEmpty())
	attempts := c.Creates.Load() - before
	t.Logf("%d creation attempts in the first %s", attempts, window)
	s.g.Expect(attempts).To(BeNumerically(">=", 4), "the controller stopped retrying a rejected creation")
	s.g.Expect(attempts).To(BeNumerically("<", 16), "creations are retried per node instead of in slow-start batches")
}
