package main

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// A leader that froze and woke writing what it had planned before is what the leader-death invariants are for: the
// sizer's Deployment going back to the round before's size once it had the round's, and a step Deployment going
// back to an earlier round's template, each fail a sample; the round's own progress does not.
func TestStaleWritesBreakTheInvariants(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0", Namespace: "ns",
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: "p"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(sizeOf(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "server", Args: []string{"--round=0"}}}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dep).Build()
	set := func(replicas int32, round string) {
		t.Helper()
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), &d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args = ptr.To(replicas), []string{"--round=" + round}
		if err := c.Update(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}

	sizer := &sizerWork{c: c, ns: "ns", count: 1}
	sizer.round.Store(1)
	for _, step := range []struct {
		replicas int32
		want     string
	}{{sizeOf(0), ""}, {sizeOf(1), ""}, {sizeOf(0), "went back to 3 replicas after it had round 1's 4: a stale write"}} {
		set(step.replicas, "0")
		bad, err := sizer.check(ctx)
		if err != nil || (step.want == "" && len(bad) > 0) || (step.want != "" && !strings.Contains(strings.Join(bad, "; "), step.want)) {
			t.Fatalf("sizer at %d replicas: %q, %v; want %q", step.replicas, bad, err, step.want)
		}
	}

	pipe := &pipelineWork{c: c, ns: "ns", count: 1}
	pipe.round.Store(2)
	var err error
	if pipe.uids, err = pipe.children(ctx); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ round, want string }{{"1", ""}, {"2", ""}, {"1", "went back from round 2 to round 1: a stale write"}} {
		set(sizeOf(1), step.round)
		bad, err := pipe.check(ctx)
		if err != nil || (step.want == "" && len(bad) > 0) || (step.want != "" && !strings.Contains(strings.Join(bad, "; "), step.want)) {
			t.Fatalf("step at round %s: %q, %v; want %q", step.round, bad, err, step.want)
		}
	}
	if left, total, err := pipe.left(ctx); err != nil || left != 2 || total != 2 {
		t.Fatalf("pipeline work left = %d of %d (%v): one step Deployment behind, one missing", left, total, err)
	}
	late := Result{Scenario: "sizer: leader death", Faults: []FaultResult{{Fault: FaultStop, WorkLeft: 3, WorkAsked: 20},
		{Fault: FaultKill, WorkLeft: 0, WorkAsked: 20}}}
	if got := late.lateFaults(); len(got) != 1 || !strings.Contains(got[0], "fault 2 (sigkill) landed after") {
		t.Fatalf("late faults = %q", got)
	}
}
