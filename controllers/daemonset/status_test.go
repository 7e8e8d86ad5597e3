package daemonset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

func TestPodProblem(t *testing.T) {
	unschedulable := testPod("p1", newRev, starting)
	unschedulable.Status.Conditions = append(unschedulable.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes: insufficient cpu"})
	crashing := testPod("p2", newRev, starting)
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	pulling := testPod("p3", newRev, starting)
	pulling.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	creating := testPod("p4", newRev, starting)
	creating.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	for pod, want := range map[*corev1.Pod]string{
		unschedulable:                   "pod p1 is unschedulable: 0/1 nodes: insufficient cpu",
		crashing:                        "pod p2 container app: CrashLoopBackOff",
		pulling:                         "pod p3 container init: ImagePullBackOff",
		creating:                        "", // still starting: may become ready by itself
		testPod("p5", newRev, failed):   "pod p5 failed",
		testPod("p6", newRev, starting): "",
	} {
		if got := podProblem(pod); got != want {
			t.Errorf("podProblem(%s) = %q, want %q", pod.Name, got, want)
		}
	}
}

func TestComputeStatusReportsAStuckRollout(t *testing.T) {
	crashing := testPod("pa2", newRev, starting)
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	nodes := []nodeView{view("a", crashing), view("b", testPod("pb", oldRev, available)), view("c", testPod("pc", oldRev, available))}
	st := computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nodes, statusInput{generation: 3, updateHash: newRev,
		currentHash: oldRev, strategy: strategy{maxUnavailable: 1}, now: now})

	if st.DesiredNumberScheduled != 3 || st.NumberAvailable != 2 || st.NumberUnavailable != 1 || st.UpdatedNumberScheduled != 1 {
		t.Fatalf("counts: %+v", st)
	}
	progressing := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing)
	if progressing.Reason != daemonsetv1alpha1.ReasonRolloutStuck || !strings.Contains(progressing.Message, "a (pod pa2 container app: CrashLoopBackOff)") {
		t.Fatalf("Progressing = %s: %s", progressing.Reason, progressing.Message)
	}
	ready := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionReady)
	if ready.Status != "False" || ready.Reason != daemonsetv1alpha1.ReasonNodesUnavailable || ready.ObservedGeneration != 3 {
		t.Fatalf("Ready = %+v", ready)
	}

	// With a budget of 2, one broken pod does not stop the rollout.
	st = computeStatus(st, nodes, statusInput{generation: 3, updateHash: newRev, currentHash: oldRev,
		strategy: strategy{maxUnavailable: 2}, now: now})
	if r := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing).Reason; r != daemonsetv1alpha1.ReasonRollingUpdate {
		t.Fatalf("with budget left, Progressing reason = %s, want %s", r, daemonsetv1alpha1.ReasonRollingUpdate)
	}
}

func TestListNodesIsStableAndBounded(t *testing.T) {
	notes := map[string]string{"f": "", "b": "x", "a": "", "e": "", "d": "", "c": "", "g": ""}
	want := "a, b (x), c, d, e and 2 more"
	for range 5 { // map order varies; the message must not
		if got := listNodes(notes); got != want {
			t.Fatalf("listNodes = %q, want %q", got, want)
		}
	}
}

// With surge, a node whose new pod starts (or crash loops) beside an available old pod is available, but not done:
// the rollout is neither complete nor Ready, and a broken new pod can make it stuck.
func TestComputeStatusWithSurgeWaitsForTheUpdatedPod(t *testing.T) {
	in := statusInput{generation: 2, updateHash: newRev, currentHash: oldRev, strategy: strategy{maxSurge: 1}, now: now}
	nodes := []nodeView{
		view("a", testPod("pa", oldRev, available), testPod("pa2", newRev, starting)),
		view("b", testPod("pb", newRev, available)),
	}
	st := computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nodes, in)
	// a runs its old pod still: updated only once that is gone (apps/v1 counts a node by its oldest pod).
	if st.NumberAvailable != 2 || st.UpdatedNumberScheduled != 1 {
		t.Fatalf("counts: %+v", st)
	}
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing); c.Reason != daemonsetv1alpha1.ReasonRollingUpdate {
		t.Errorf("Progressing = %s (%s), want %s while a's new pod is not available", c.Reason, c.Message, daemonsetv1alpha1.ReasonRollingUpdate)
	}
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionReady); c.Status != "False" || c.Reason != daemonsetv1alpha1.ReasonUpdatePending {
		t.Errorf("Ready = %s %s, want False %s", c.Status, c.Reason, daemonsetv1alpha1.ReasonUpdatePending)
	}

	crashing := testPod("pa2", newRev, starting)
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	nodes[0] = view("a", testPod("pa", oldRev, available), crashing)
	st = computeStatus(st, nodes, in)
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing); c.Reason != daemonsetv1alpha1.ReasonRolloutStuck {
		t.Errorf("Progressing = %s (%s), want %s: the surge budget is used up by a pod that will not start", c.Reason, c.Message, daemonsetv1alpha1.ReasonRolloutStuck)
	}

	nodes[0] = view("a", testPod("pa", oldRev, available), testPod("pa2", newRev, available))
	st = computeStatus(st, nodes, in)
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionReady); c.Status != "True" {
		t.Errorf("Ready = %s %s once every new pod is available, want True", c.Status, c.Reason)
	}
}

// A node tainted NoSchedule after its pod started keeps that pod through a rollout: the status must not call the
// rollout complete while it runs an old revision, and says why and what to do; with in place allowed it is pending.
func TestComputeStatusTellsOfOldPodsOnNodesThatAdmitNoNewPod(t *testing.T) {
	tainted := nodeView{name: "a", eligibility: eligibility{shouldContinueRunning: true}, canary: true, pods: []*corev1.Pod{testPod("pa", oldRev, available)}}
	nodes := []nodeView{tainted, view("b", testPod("pb", newRev, available))}
	in := statusInput{generation: 2, updateHash: newRev, currentHash: oldRev, strategy: strategy{maxUnavailable: 1}, now: now}
	st := computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nodes, in)
	if st.DesiredNumberScheduled != 1 || st.UpdatedNumberScheduled != 1 || st.NumberMisscheduled != 1 {
		t.Fatalf("counts: %+v", st)
	}
	c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing)
	if c.Status != "False" || c.Reason != daemonsetv1alpha1.ReasonOldPodsKept || !strings.Contains(c.Message, "1 nodes keep a pod of an old revision") ||
		!strings.Contains(c.Message, ": a;") {
		t.Errorf("Progressing = %s %s (%s), want False %s naming node a", c.Status, c.Reason, c.Message, daemonsetv1alpha1.ReasonOldPodsKept)
	}

	in.strategy = strategy{maxUnavailable: 1, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	st = computeStatus(st, nodes, in)
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing); c.Reason != daemonsetv1alpha1.ReasonRollingUpdate {
		t.Errorf("with in place, Progressing = %s (%s), want %s", c.Reason, c.Message, daemonsetv1alpha1.ReasonRollingUpdate)
	}
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionReady); c.Reason != daemonsetv1alpha1.ReasonUpdatePending {
		t.Errorf("with in place, Ready = %s (%s), want %s", c.Reason, c.Message, daemonsetv1alpha1.ReasonUpdatePending)
	}

	nodes[0].pods = []*corev1.Pod{testPod("pa", newRev, available)}
	st = computeStatus(st, nodes, in)
	if c := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing); c.Reason != daemonsetv1alpha1.ReasonComplete {
		t.Errorf("once updated, Progressing = %s (%s), want %s", c.Reason, c.Message, daemonsetv1alpha1.ReasonComplete)
	}
}
