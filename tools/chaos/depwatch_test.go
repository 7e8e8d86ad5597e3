package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A stale size that the leader puts right at once is seen by the watch, though a list just after shows all well:
// the sizer's invariant is judged at every event of its Deployments.
func TestTheWatchSeesAStaleWritePutRightAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0", Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(sizeOf(0))}}
	cs := kubefake.NewClientset(dep)
	sizer := &sizerWork{ns: "ns", count: 1}
	watch, err := newDeploymentWatch(ctx, cs, "ns", sizer.judgeDeployment)
	if err != nil {
		t.Fatal(err)
	}
	sizer.round.Store(1)
	resize := func(n int32) {
		t.Helper()
		d, err := cs.AppsV1().Deployments("ns").Get(ctx, "chaos-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr.To(n)
		if _, err := cs.AppsV1().Deployments("ns").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The round's size, then the round before's written by a woken leader, then the round's again.
	for _, n := range []int32{sizeOf(1), sizeOf(0), sizeOf(1)} {
		resize(n)
	}
	var found []string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		found = append(found, watch.take()...)
		events, _ := watch.judged()
		return events >= 4, nil // the listed Deployment and three updates
	}); err != nil {
		events, _ := watch.judged()
		t.Fatalf("the watch judged %d events: %v", events, err)
	}
	found = append(found, watch.take()...)
	if events, violations := watch.judged(); violations != 1 || !strings.Contains(strings.Join(found, "; "), "a stale write") {
		t.Fatalf("after %d events, %d violations: %q; want the one stale write", events, violations, found)
	}
}

// A step Deployment gone back to an earlier round's template is one violation; the rounds going forward are none.
func TestPipelineJudgeSeesATemplateGoBack(t *testing.T) {
	w := &pipelineWork{}
	step := func(round string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0-detect", Labels: map[string]string{"inference.keelson.dev/pipeline": "chaos-0"}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "server", Args: []string{"--round=" + round}}}}}}}
	}
	var bad []string
	for _, r := range []string{"0", "1", "2", "1", "2"} {
		bad = append(bad, w.judgeDeployment(step(r))...)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "went back from round 2 to round 1") {
		t.Fatalf("judged %q; want the one step back", bad)
	}
	unlabelled := step("0")
	unlabelled.Labels = nil
	if got := w.judgeDeployment(unlabelled); got != nil {
		t.Fatalf("a Deployment of no pipeline judged: %q", got)
	}
}

// flakyAsk is a workload whose asking fails a number of times first, as a call routed to a frozen replica's
// webhook does.
type flakyAsk struct {
	workload
	failures int
	asked    []int
}

func (f *flakyAsk) change(_ context.Context, round int) error {
	f.asked = append(f.asked, round)
	if f.failures > 0 {
		f.failures--
		return errors.New("context deadline exceeded calling the webhook")
	}
	return nil
}

// The round asked while a leader is frozen is asked again until the apiserver takes it.
func TestTheRoundAskedDuringAFreezeIsRetried(t *testing.T) {
	f := &flakyAsk{failures: 2}
	if err := askUntilTaken(context.Background(), f, 7); err != nil {
		t.Fatal(err)
	}
	if len(f.asked) != 3 || f.asked[2] != 7 {
		t.Fatalf("asked %v; want round 7 three times", f.asked)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := askUntilTaken(ctx, &flakyAsk{failures: 1 << 30}, 8); err == nil || !strings.Contains(err.Error(), "round 8") {
		t.Fatalf("an ask that never succeeds: %v; want an error naming the round", err)
	}
}

// With a watch judging the Deployments, what only a list shows (a step's Service deleted and created again) still
// counts among the violations.
func TestListFindingsCountBesideTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0-detect", Namespace: "ns", UID: "second",
		Labels: map[string]string{"inference.keelson.dev/pipeline": "chaos-0"}}}
	w := &pipelineWork{c: fake.NewClientBuilder().WithScheme(scheme).WithObjects(svc).Build(), ns: "ns",
		uids: map[string]types.UID{"Service chaos-0-detect": "first"}}
	var err error
	if w.watch, err = newDeploymentWatch(ctx, kubefake.NewClientset(), "ns", w.judgeDeployment); err != nil {
		t.Fatal(err)
	}
	bad, err := w.check(ctx)
	if err != nil || len(bad) != 1 || !strings.Contains(bad[0], "was deleted and created again") {
		t.Fatalf("check = %q, %v; want the Service created again", bad, err)
	}
	if _, violations := w.judged(); violations != 1 {
		t.Fatalf("judged %d violations, want the list's one", violations)
	}
}

// A round asked during a freeze moves the rounds on by two: a Deployment the fault caught a round behind is no
// violation at its old size, and once it has the newest size, a size of an earlier round is a stale write.
func TestSizerJudgeAcrossARoundAskedDuringAFreeze(t *testing.T) {
	w := &sizerWork{}
	dep := func(n int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(n)}}
	}
	steps := []struct {
		round, size int32
		want        string
	}{
		{4, sizeOf(4), ""},
		{5, sizeOf(4), ""}, // the round's work asked, the fault lands before this one is resized
		{6, sizeOf(4), ""}, // a round asked during the freeze: still two rounds behind
		{6, sizeOf(6), ""}, // the new leader resizes it
		{6, sizeOf(5), "went back to 5 replicas after it had round 6's 3: a stale write"}, // the woken leader's plan
		{6, 1, "has 1 replicas; its sizer asked for 3"},
	}
	for i, s := range steps {
		w.round.Store(s.round)
		got := strings.Join(w.judgeDeployment(dep(s.size)), "; ")
		if (s.want == "" && got != "") || !strings.Contains(got, s.want) {
			t.Fatalf("step %d (round %d, %d replicas): %q, want %q", i, s.round, s.size, got, s.want)
		}
	}
}
