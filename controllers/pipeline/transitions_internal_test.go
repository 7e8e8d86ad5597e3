package pipeline

import (
	"testing"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// unschedulableStep is a step's status while its pod cannot be scheduled, with the scheduler's message.
func unschedulableStep(pod, msg string) inferencev1alpha1.PipelineStatus {
	return inferencev1alpha1.PipelineStatus{Phase: inferencev1alpha1.PhaseDegraded, Steps: []inferencev1alpha1.StepStatus{{
		Name: "a", Phase: inferencev1alpha1.PhaseDegraded, Reason: inferencev1alpha1.ReasonUnschedulable,
		Message: "0 of 1 replicas ready; pod " + pod + " cannot be scheduled: " + msg}}}
}

// A step whose trouble changes cause under the same reason is a new event: a pod first refused for a claim not
// bound yet, then (the claim bound) for a taint it does not tolerate, tells the taint. The same cause with other
// numbers (the cluster grew a node) or on a new pod of the step (a rollout) is the same trouble: no event.
func TestANewCauseUnderTheSameReasonIsAnEvent(t *testing.T) {
	unbound := unschedulableStep("s-a-5d8f-x2x9q", "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. "+
		"preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
	taint := unschedulableStep("s-a-5d8f-x2x9q", "0/4 nodes are available: 1 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}, "+
		"3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
	grown := unschedulableStep("s-a-5d8f-x2x9q", "0/5 nodes are available: 1 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}, "+
		"4 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")
	rolled := unschedulableStep("s-a-77c4b9-kq2wz", "0/5 nodes are available: 1 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}, "+
		"4 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")

	evs := transitions(unbound, taint)
	if len(evs) != 1 || evs[0].reason != inferencev1alpha1.ReasonUnschedulable || evs[0].step != "a" || evs[0].note != "Step a: "+taint.Steps[0].Message {
		t.Errorf("a new cause under the same reason: events %+v, want one Warning %s telling the taint", evs, inferencev1alpha1.ReasonUnschedulable)
	}
	for name, c := range map[string]struct {
		old, cur inferencev1alpha1.PipelineStatus
	}{
		"other numbers": {taint, grown},
		"another pod":   {grown, rolled},
	} {
		if evs := transitions(c.old, c.cur); len(evs) != 0 {
			t.Errorf("%s, the same cause: events %+v, want none", name, evs)
		}
	}
}
