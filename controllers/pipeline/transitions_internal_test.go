package pipeline

import (
	"slices"
	"testing"
	"time"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// troubledStep is a pipeline's status with one step in trouble: its phase, reason and message.
func troubledStep(phase inferencev1alpha1.Phase, reason, msg string) inferencev1alpha1.PipelineStatus {
	return inferencev1alpha1.PipelineStatus{Phase: phase, Steps: []inferencev1alpha1.StepStatus{{
		Name: "a", Phase: phase, Reason: reason, Message: msg}}}
}

// unschedulableStep is a pipeline's status while its step's pod cannot be scheduled, with the scheduler's message.
func unschedulableStep(pod, msg string) inferencev1alpha1.PipelineStatus {
	return troubledStep(inferencev1alpha1.PhaseDegraded, inferencev1alpha1.ReasonUnschedulable,
		"0 of 1 replicas ready; pod "+pod+" cannot be scheduled: "+msg)
}

// testNow is when the changes of these tests happen.
var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// What the scheduler's PostFilter plugins add to its message (claims to deallocate, preemption), in the words of
// kube-scheduler 1.36.
const postFilter = " no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."

// A pod the scheduler refuses for a new cause is a new event, under the same reason: a pod first refused for a claim
// not bound yet, then (the claim bound) for a taint it does not tolerate, tells the taint. The same causes in other
// words of the scheduler's (other counts, so another order; another PostFilter verdict), a cause going away, a node
// of the cluster cordoned, a new pod of the step (a rollout), or the kubelet's alternating texts of one image that
// cannot be pulled, are the same trouble: no event.
func TestANewCauseUnderTheSameReasonIsAnEvent(t *testing.T) {
	unbound := unschedulableStep("s-a-5d8f-x2x9q", "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."+postFilter)
	taint := unschedulableStep("s-a-5d8f-x2x9q", "0/4 nodes are available: 1 node(s) had untolerated taint(s), "+
		"3 node(s) didn't match Pod's node affinity/selector."+postFilter)

	evs := transitions(unbound, taint, told{}, testNow)
	if len(evs) != 1 || evs[0].reason != inferencev1alpha1.ReasonUnschedulable || evs[0].step != "a" || evs[0].note != "Step a: "+taint.Steps[0].Message {
		t.Errorf("a new cause under the same reason: events %+v, want one Warning %s telling the taint", evs, inferencev1alpha1.ReasonUnschedulable)
	}
	gpus := unschedulableStep("s-a-5d8f-x2x9q", "0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s)."+postFilter)
	if evs := transitions(taint, gpus, told{}, testNow); len(evs) != 1 {
		t.Errorf("from a taint to too few GPUs: events %+v, want one", evs)
	}

	pullErr := troubledStep(inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonImagePull,
		"0 of 1 replicas ready; pod s-a-5d8f-x2x9q cannot pull its image (ErrImagePull): failed to pull image \"x:1\": not found")
	backOff := troubledStep(inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonImagePull,
		"0 of 1 replicas ready; pod s-a-5d8f-x2x9q cannot pull its image (ImagePullBackOff): Back-off pulling image \"x:1\"")
	for name, c := range map[string]struct {
		old, cur inferencev1alpha1.PipelineStatus
	}{
		"other counts, in another order": {gpus, unschedulableStep("s-a-5d8f-x2x9q",
			"0/7 nodes are available: 3 node(s) had untolerated taint(s), 4 Insufficient nvidia.com/gpu."+postFilter)},
		"another PostFilter verdict": {gpus, unschedulableStep("s-a-5d8f-x2x9q",
			"0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s). still not schedulable, preemption: "+
				"0/5 nodes are available: 2 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.")},
		"no PostFilter verdict, an autoscaler's note": {gpus, unschedulableStep("s-a-5d8f-x2x9q",
			"0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint(s).; "+
				"replicas are left to HorizontalPodAutoscaler a")},
		"a cause going away": {gpus, unschedulableStep("s-a-5d8f-x2x9q", "0/5 nodes are available: 5 Insufficient nvidia.com/gpu."+postFilter)},
		"a node cordoned": {gpus, unschedulableStep("s-a-5d8f-x2x9q",
			"0/5 nodes are available: 1 node(s) were unschedulable, 2 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s)."+postFilter)},
		"another pod": {taint, unschedulableStep("s-a-77c4b9-kq2wz", "0/4 nodes are available: 1 node(s) had untolerated taint(s), "+
			"3 node(s) didn't match Pod's node affinity/selector."+postFilter)},
		"an image pull backing off": {pullErr, backOff},
		"an image pull tried again": {backOff, pullErr},
	} {
		if evs := transitions(c.old, c.cur, told{}, testNow); len(evs) != 0 {
			t.Errorf("%s, the same trouble: events %+v, want none", name, evs)
		}
	}
}

// The scheduler's causes are its clauses without their counts or its PostFilter plugins' verdicts, in either of its
// forms (a PreFilter's sentence, or counted clauses; taints named, as before 1.34, or not); a message that is not the
// scheduler's has none.
func TestSchedulingCauses(t *testing.T) {
	for msg, want := range map[string][]string{
		"2 of 3 replicas ready; pod p-x cannot be scheduled: 0/12 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, " +
			"10 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/12 nodes are available: " +
			"12 Preemption is not helpful for scheduling.": {"Insufficient nvidia.com/gpu", "node(s) didn't match Pod's node affinity/selector",
			"node(s) had untolerated taint {node.kubernetes.io/unreachable}"},
		"0 of 1 replicas ready; pod p-x cannot be scheduled: 0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims." + postFilter: {
			"pod has unbound immediate PersistentVolumeClaims"},
		"0 of 1 replicas ready; pod p-x cannot be scheduled: 0/8 nodes are available: 8 Insufficient example.com/gpu." + postFilter: {
			"Insufficient example.com/gpu"},
		"0 of 1 replicas ready; container server of pod p-x keeps exiting (exit code 1)": nil,
	} {
		if got := schedulingCauses(msg); !slices.Equal(got, want) {
			t.Errorf("causes of %q: %q, want %q", msg, got, want)
		}
	}
}

// A cause that comes and goes with the rest of the cluster (a node joining, tainted not-ready, told by the scheduler
// in the words of any taint) is told once while the step stays Unschedulable, not each time it comes back; once the
// step has left Unschedulable, its causes are told anew.
func TestACauseThatComesBackIsNotToldAgain(t *testing.T) {
	gpus := unschedulableStep("s-a-5d8f-x2x9q", "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node affinity/selector."+postFilter)
	joining := unschedulableStep("s-a-5d8f-x2x9q", "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s), "+
		"3 node(s) didn't match Pod's node affinity/selector."+postFilter)
	starting := troubledStep(inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonImagePull, "0 of 1 replicas ready; pod s-a-5d8f-x2x9q cannot pull its image (ErrImagePull)")
	tld := told{}
	for i, c := range []struct {
		old, cur inferencev1alpha1.PipelineStatus
		events   int
	}{
		{inferencev1alpha1.PipelineStatus{}, gpus, 1}, // Unschedulable: told
		{gpus, joining, 1},                            // a new cause: told
		{joining, gpus, 0},                            // the node is ready: nothing new
		{gpus, joining, 0},                            // another node joins: told already
		{joining, starting, 1},                        // another reason
		{starting, joining, 1},                        // Unschedulable again: told anew
	} {
		var steps []event // the pipeline's phase changes too, and its events are not what this is about
		for _, e := range transitions(c.old, c.cur, tld, testNow) {
			if e.step != "" {
				steps = append(steps, e)
			}
		}
		if len(steps) != c.events {
			t.Errorf("change %d: step events %+v, want %d", i, steps, c.events)
		}
	}
	tld = told{"gone": {"x": testNow}, "a": {}}
	transitions(gpus, joining, tld, testNow)
	if _, ok := tld["gone"]; ok {
		t.Errorf("a step gone from the spec is remembered: %v", tld)
	}
	if _, ok := tld["a"]; !ok {
		t.Errorf("an unschedulable step is forgotten: %v", tld)
	}

	// A process that remembers nothing (a restart, another leader) takes the causes of the status as told; a cause
	// told over toldFor ago, its event gone, is told again.
	tld = told{}
	steps := func(old, cur inferencev1alpha1.PipelineStatus, at time.Time) (n int) {
		for _, e := range transitions(old, cur, tld, at) {
			if e.step != "" {
				n++
			}
		}
		return n
	}
	if n := steps(joining, gpus, testNow); n != 0 {
		t.Errorf("after a restart, a cause going away: %d step events, want none", n)
	}
	if n := steps(gpus, joining, testNow.Add(time.Minute)); n != 0 {
		t.Errorf("after a restart, a cause of the last status coming back: %d step events, want none", n)
	}
	if n := steps(joining, gpus, testNow.Add(2*time.Minute)); n != 0 {
		t.Errorf("a cause going away: %d step events, want none", n)
	}
	if n := steps(gpus, joining, testNow.Add(toldFor+2*time.Minute)); n != 1 {
		t.Errorf("a cause coming back after its event is gone: %d step events, want 1", n)
	}
}

// Before Kubernetes 1.34 the scheduler names the taint with its value, which may change while the taint stays (the
// cluster autoscaler's deletion taint carries a time): the cause is the taint's key.
func TestATaintsValueIsNotACause(t *testing.T) {
	at := func(v string) []string {
		return schedulingCauses("0 of 1 replicas ready; pod p-x cannot be scheduled: 0/3 nodes are available: " +
			"1 node(s) had untolerated taint {ToBeDeletedByClusterAutoscaler: " + v + "}, 2 Insufficient nvidia.com/gpu.")
	}
	if a, b := at("1764201600"), at("1764201900"); !slices.Equal(a, b) {
		t.Errorf("causes %q and %q, want the same", a, b)
	}
}
