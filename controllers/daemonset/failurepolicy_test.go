package daemonset

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// crashLooping is a pod of the new revision whose container crash-loops.
func crashLooping(name string) *corev1.Pod {
	p := testPod(name, newRev, starting)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	return p
}

func TestDecideFailure(t *testing.T) {
	templates := map[string]*corev1.PodTemplateSpec{oldRev: testTemplate("a:1"), newRev: testTemplate("a:2")}
	policy := func(action daemonsetv1alpha1.RolloutFailureAction, maxFailed intstr.IntOrString) *daemonsetv1alpha1.RolloutFailurePolicy {
		return &daemonsetv1alpha1.RolloutFailurePolicy{Action: action, MaxFailedNodes: &maxFailed, ProgressDeadlineSeconds: ptr.To[int32](60)}
	}
	oneCrash := []nodeView{view("a", crashLooping("pa")), view("b", testPod("pb", oldRev, available)),
		view("c", testPod("pc", oldRev, available))}
	input := func(p *daemonsetv1alpha1.RolloutFailurePolicy) failureInput {
		return failureInput{policy: p, generation: 4, updateHash: newRev, currentHash: oldRev, stableHash: oldRev,
			known: templates, strategy: rolling(1, 0), now: now}
	}

	if d := decideFailure(oneCrash, input(nil)); d.failure != nil {
		t.Errorf("no policy: %+v", d.failure)
	}
	if d := decideFailure(oneCrash, input(policy(daemonsetv1alpha1.RolloutFailureContinue, intstr.FromInt32(0)))); d.failure != nil {
		t.Errorf("Continue: %+v", d.failure)
	}
	if d := decideFailure(oneCrash, input(policy(daemonsetv1alpha1.RolloutFailurePause, intstr.FromInt32(1)))); d.failure != nil {
		t.Errorf("one failed node, maxFailedNodes 1: %+v", d.failure)
	}
	// 34% of 3 nodes rounds down to 1: one failed node is allowed.
	if d := decideFailure(oneCrash, input(policy(daemonsetv1alpha1.RolloutFailurePause, intstr.FromString("34%")))); d.failure != nil {
		t.Errorf("one failed node, maxFailedNodes 34%%: %+v", d.failure)
	}

	d := decideFailure(oneCrash, input(policy(daemonsetv1alpha1.RolloutFailurePause, intstr.FromInt32(0))))
	if d.failure == nil || !d.declared || d.failure.Action != daemonsetv1alpha1.RolloutFailurePause || d.failure.Revision != newRev ||
		d.failure.Generation != 4 || d.failure.FailedNodes != 1 || !strings.Contains(d.failure.Message, "a (pod pa container app: CrashLoopBackOff)") {
		t.Fatalf("Pause: %+v", d)
	}
	// Recorded, it holds for the same revision and generation, even once the pod has gone.
	in := input(policy(daemonsetv1alpha1.RolloutFailurePause, intstr.FromInt32(0)))
	in.recorded = d.failure
	healthy := []nodeView{view("a", testPod("pa", oldRev, available))}
	if again := decideFailure(healthy, in); again.failure != d.failure || again.declared {
		t.Errorf("recorded failure: %+v", again)
	}
	in.generation = 5 // paused, say: the failure holds
	if again := decideFailure(healthy, in); again.failure != d.failure {
		t.Errorf("another spec change lifts the failure: %+v", again.failure)
	}
	in.policy = policy(daemonsetv1alpha1.RolloutFailurePause, intstr.FromInt32(2))
	if again := decideFailure(healthy, in); again.failure != nil {
		t.Errorf("a changed policy keeps the failure: %+v", again.failure)
	}

	d = decideFailure(oneCrash, input(policy(daemonsetv1alpha1.RolloutFailureRollback, intstr.FromInt32(0))))
	if d.failure == nil || d.failure.Action != daemonsetv1alpha1.RolloutFailureRollback || d.failure.RolledBackTo != oldRev {
		t.Fatalf("Rollback: %+v", d.failure)
	}
	// Every pod replaced at once: no old pod left, the stable revision is the target.
	allNew := []nodeView{view("a", crashLooping("pa")), view("b", crashLooping("pb"))}
	in = input(policy(daemonsetv1alpha1.RolloutFailureRollback, intstr.FromInt32(0)))
	in.currentHash = newRev
	if d := decideFailure(allNew, in); d.failure == nil || d.failure.RolledBackTo != oldRev {
		t.Errorf("Rollback with every pod replaced: %+v", d.failure)
	}
	// No earlier revision known: a pause that says why.
	in.stableHash = ""
	in.currentHash = oldRev
	in.known = map[string]*corev1.PodTemplateSpec{newRev: templates[newRev]}
	if d := decideFailure(allNew, in); d.failure == nil || d.failure.Action != daemonsetv1alpha1.RolloutFailurePause ||
		!strings.Contains(d.failure.Message, "paused instead of rolled back") {
		t.Errorf("Rollback with no target: %+v", d.failure)
	}
	// A DaemonSet's first revision has nothing to pause or roll back.
	in.currentHash = newRev
	if d := decideFailure(allNew, in); d.failure != nil {
		t.Errorf("first revision: %+v", d.failure)
	}
}

// A pod not ready past the progress deadline from its creation fails its node; before, the pass asks to be woken
// when the deadline comes. A node that went down after its pod was updated fails too.
func TestFailedNodes(t *testing.T) {
	young := testPod("pa", newRev, starting)
	young.CreationTimestamp = metav1.NewTime(now.Add(-20 * time.Second))
	old := testPod("pb", newRev, starting)
	old.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
	down := view("c", testPod("pc", newRev, starting))
	down.down = true
	down.pods[0].Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	nodes := []nodeView{view("a", young), view("b", old), down, view("d", testPod("pd", oldRev, available))}
	failed, recheck := updateFailures(nodes, newRev, oldRev, rolling(1, 0), time.Minute, now)
	if len(failed) != 2 || !strings.Contains(failed["b"], "not ready 1m0s after it started") ||
		failed["c"] != "the node went down after its pod was updated" {
		t.Errorf("failed = %v", failed)
	}
	if recheck != 40*time.Second {
		t.Errorf("recheck = %s, want 40s", recheck)
	}
}

// Under a pause the planner updates no node, and a node without a pod gets the stable revision; under a rollback the
// stable revision is the one rolled out, and pods of the failed one are replaced like old pods.
func TestPlanUnderFailure(t *testing.T) {
	templates := map[string]*corev1.PodTemplateSpec{oldRev: testTemplate("a:1"), newRev: testTemplate("a:2")}
	nodes := []nodeView{view("a", crashLooping("pa")), view("b", testPod("pb", oldRev, available)), view("c")}
	pause := &daemonsetv1alpha1.RolloutFailure{Revision: newRev, Action: daemonsetv1alpha1.RolloutFailurePause}
	s, update, current := underFailure(pause, rolling(1, 0), newRev, oldRev, oldRev, templates)
	if got := summary(planNodes(nodes, s, update, current, now)); len(got) != 1 || got[0] != "create c@old" {
		t.Errorf("paused plan = %v, want [create c@old]", got)
	}
	rollback := &daemonsetv1alpha1.RolloutFailure{Revision: newRev, Action: daemonsetv1alpha1.RolloutFailureRollback, RolledBackTo: oldRev}
	s, update, current = underFailure(rollback, rolling(1, 0), newRev, oldRev, oldRev, templates)
	got := summary(planNodes(nodes, s, update, current, now))
	if len(got) != 2 || got[0] != "create c@old" || got[1] != "delete pa (Update)" {
		t.Errorf("rollback plan = %v, want [create c@old delete pa (Update)]", got)
	}

	st := computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nodes, statusInput{generation: 2, updateHash: update,
		currentHash: current, strategy: s, now: now})
	markFailure(&st, rollback, false)
	if st.RolloutFailure == nil || st.UpdateRevision != oldRev {
		t.Errorf("status under rollback: %+v", st)
	}
	for _, c := range []string{daemonsetv1alpha1.ConditionProgressing, daemonsetv1alpha1.ConditionReady} {
		if cond := meta.FindStatusCondition(st.Conditions, c); cond.Status != "False" || cond.Reason != daemonsetv1alpha1.ReasonRolledBack {
			t.Errorf("%s = %s %s, want False %s", c, cond.Status, cond.Reason, daemonsetv1alpha1.ReasonRolledBack)
		}
	}

	// The user's pause holds the rollback too: the status says it waits, not that it is done.
	paused := rolling(1, 0)
	paused.paused = true
	s, update, current = underFailure(rollback, paused, newRev, oldRev, oldRev, templates)
	if got := summary(planNodes(nodes, s, update, current, now)); len(got) != 1 || got[0] != "create c@old" {
		t.Errorf("paused rollback plan = %v, want [create c@old] (new nodes only)", got)
	}
	st = computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nodes, statusInput{generation: 2, updateHash: update,
		currentHash: current, strategy: s, now: now})
	markFailure(&st, rollback, true)
	cond := meta.FindStatusCondition(st.Conditions, daemonsetv1alpha1.ConditionProgressing)
	if cond.Reason != daemonsetv1alpha1.ReasonPaused || !strings.Contains(cond.Message, "rollback to revision "+oldRev+" waits") {
		t.Errorf("Progressing under a paused rollback = %s: %s", cond.Reason, cond.Message)
	}
}

// A revision becomes stable once every eligible node runs only its pods, each ready for the settle time (testPod's
// available pods have been ready a minute); a pod ready for less says when to look again, and a crash-looping one,
// briefly ready between restarts, keeps it from settling.
func TestSettled(t *testing.T) {
	if ok, _ := settled([]nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", oldRev, available))},
		newRev, 0, now); ok {
		t.Error("settled mid-rollout")
	}
	both := []nodeView{view("a", testPod("pa", newRev, available)), view("b", testPod("pb", newRev, available))}
	if ok, _ := settled(both, newRev, 30*time.Second, now); !ok {
		t.Error("not settled with every pod ready a minute, settle time 30s")
	}
	if ok, wait := settled(both, newRev, 90*time.Second, now); ok || wait != 30*time.Second {
		t.Errorf("settle time 90s: settled %v, wait %s, want false and 30s", ok, wait)
	}
	if ok, _ := settled([]nodeView{view("a", testPod("pa", newRev, available)), view("b", crashLooping("pb"))}, newRev, 0, now); ok {
		t.Error("settled with a crash-looping pod")
	}
	// Under constant node churn a pod on a node that joined within the settle time is never ready for all of it: such
	// a pod need only be ready, once the revision has proven itself for the whole settle time on the nodes that were
	// there. A pod as young on a node that was there holds it back, and so does a young node's pod not ready at all.
	joined := func(v nodeView, ago time.Duration) nodeView { v.joined = now.Add(-ago); return v }
	churn := []nodeView{view("a", testPod("pa", newRev, available)), joined(view("b", readyFor(testPod("pb", newRev, available), 5*time.Second)), 10*time.Second)}
	if ok, _ := settled(churn, newRev, 30*time.Second, now); !ok {
		t.Error("not settled because of a pod on a node that joined 10s ago, ready since")
	}
	replaced := []nodeView{view("a", testPod("pa", newRev, available)), view("b", readyFor(testPod("pb", newRev, available), 5*time.Second))}
	if ok, wait := settled(replaced, newRev, 30*time.Second, now); ok || wait != 25*time.Second {
		t.Errorf("a young pod on a node that was there: settled %v, wait %s, want false and 25s", ok, wait)
	}
	if ok, _ := settled([]nodeView{churn[0], joined(view("b", testPod("pb", newRev, starting)), 10*time.Second)}, newRev, 30*time.Second, now); ok {
		t.Error("settled with a new node's pod not ready")
	}
	flapping := readyFor(testPod("pb", newRev, available), 5*time.Second)
	flapping.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 4, Ready: true}}
	if ok, _ := settled([]nodeView{churn[0], joined(view("b", flapping), 10*time.Second)}, newRev, 30*time.Second, now); ok {
		t.Error("settled with a new node's pod ready a moment between restarts")
	}
	allNew := []nodeView{joined(view("a", readyFor(testPod("pa", newRev, available), 5*time.Second)), 10*time.Second),
		joined(view("b", readyFor(testPod("pb", newRev, available), 8*time.Second)), 10*time.Second)}
	if ok, wait := settled(allNew, newRev, 30*time.Second, now); ok || wait != 22*time.Second {
		t.Errorf("every node new: settled %v, wait %s, want false and 22s (proven nowhere yet)", ok, wait)
	}
	// A node that admits no new pod, or is down, does not hold the revision back (a NotReady node is tainted too).
	if ok, _ := settled([]nodeView{view("a", testPod("pa", newRev, available)), tainted(view("b", testPod("pb", oldRev, available)))},
		newRev, 0, now); !ok {
		t.Error("not settled because of an old pod kept on a node that admits no new pod")
	}
}

// Review findings, each a case that went wrong: a rollback reaches nodes the partition holds; back at the stable
// revision nothing is judged; a down node is no kept node; a status overridden within a pass keeps its times.
func TestFailurePolicyEdges(t *testing.T) {
	templates := map[string]*corev1.PodTemplateSpec{oldRev: testTemplate("a:1"), newRev: testTemplate("a:2")}
	rollback := &daemonsetv1alpha1.RolloutFailure{Revision: newRev, Action: daemonsetv1alpha1.RolloutFailureRollback, RolledBackTo: oldRev}
	nodes := []nodeView{view("a", testPod("pa", oldRev, available)), view("b", crashLooping("pb"))}
	s, update, current := underFailure(rollback, strategy{maxUnavailable: 1, partition: 1}, newRev, oldRev, oldRev, templates)
	if got := summary(planNodes(nodes, s, update, current, now)); len(got) != 1 || got[0] != "delete pb (Update)" {
		t.Errorf("rollback under a partition: plan %v, want [delete pb (Update)]", got)
	}

	policy := &daemonsetv1alpha1.RolloutFailurePolicy{Action: daemonsetv1alpha1.RolloutFailureRollback}
	if d := decideFailure([]nodeView{view("a", crashLooping("pa"))}, failureInput{policy: policy, generation: 1, updateHash: newRev,
		currentHash: oldRev, stableHash: newRev, known: templates, strategy: rolling(1, 0), now: now}); d.failure != nil {
		t.Errorf("back at the stable revision: %+v", d.failure)
	}

	down := tainted(view("a", testPod("pa", oldRev, starting)))
	down.down = true
	if k := keptOld(down, statusInput{updateHash: newRev, strategy: rolling(1, 0), now: now}); k != keptNone {
		t.Errorf("a down node is kept: %d", k)
	}

	before := []metav1.Condition{{Type: "Progressing", Status: "False", Reason: "RolledBack", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	after := []metav1.Condition{{Type: "Progressing", Status: "False", Reason: "RolledBack", LastTransitionTime: metav1.NewTime(now)}}
	keepTransitionTimes(after, before)
	if !after[0].LastTransitionTime.Equal(&before[0].LastTransitionTime) {
		t.Error("a condition whose status did not change got a new transition time")
	}
}
