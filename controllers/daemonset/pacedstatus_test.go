package daemonset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A pass that fails is retried after the work queue's backoff, which ignores the pacer's requeue and grows with
// every failure: a DaemonSet whose pods on one node are always refused (a quota, an admission policy) would keep
// moving counters unwritten for minutes. A failing pass writes its status without pacing; the backoff paces it.
func TestAFailingPassWritesItsCountersUnpaced(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile()
	w.settle()
	w.setPod(w.podOn("a"), func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	w.mustReconcile() // writes the counters; the next pass comes within the pacer's interval
	if st := w.ds().Status; st.NumberReady != 1 {
		t.Fatalf("stored status %+v, want 1 ready", st)
	}

	w.step = 100 * time.Millisecond
	w.setPod(w.podOn("b"), func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	if err := w.live.Create(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}); err != nil {
		t.Fatal(err)
	}
	w.createErr = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errQuota)
	if _, err := w.reconcile(); err == nil {
		t.Fatal("a pass whose create was refused succeeded: the test proves nothing")
	}
	if st := w.ds().Status; st.NumberReady != 2 || st.DesiredNumberScheduled != 3 {
		t.Fatalf("stored status %+v after a failing pass, want 2 ready of 3 desired", st)
	}
}

// errQuota is a quota's refusal, as the apiserver words it.
var errQuota = quotaError("exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2")

type quotaError string

func (e quotaError) Error() string { return string(e) }
