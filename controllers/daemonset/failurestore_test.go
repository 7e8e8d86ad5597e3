package daemonset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A failure the policy declares is stored before it is acted on. Were the crash-looping pod deleted (rolled back) in
// the pass whose status write then fails, the next pass would find no failure and roll the failed revision out
// again on that node; instead the pod stays until a pass has stored the failure (on the failed revision, and in the
// status), and the next pass rolls it back.
func TestAFailureIsStoredBeforeItIsActedOn(t *testing.T) {
	w := newWorld(t, "a")
	ds := w.ds()
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one,
		FailurePolicy: &daemonsetv1alpha1.RolloutFailurePolicy{Action: daemonsetv1alpha1.RolloutFailureRollback,
			MaxFailedNodes: &zero, ProgressDeadlineSeconds: ptr.To[int32](1)}}
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	ready := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(w.clock.Add(-time.Hour))}}
	}
	w.mustReconcile()
	w.settle()
	w.setPod(w.podOn("a"), ready)
	w.mustReconcile()
	if w.ds().Status.StableRevision == "" {
		t.Fatal("the first revision did not become stable")
	}

	ds = w.ds()
	ds.Spec.Image = "agent:v2"
	ds.Generation++
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	w.mustReconcile() // the old pod goes
	w.settle()
	w.mustReconcile() // the new one comes
	w.settle()
	crashing := w.podOn("a")
	w.setPod(crashing, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	})

	w.statusErr = apierrors.NewServiceUnavailable("etcd is slow")
	if _, err := w.reconcile(); err == nil {
		t.Fatal("the failed status write was not reported")
	}
	if got := w.podOn("a"); got != crashing {
		t.Fatalf("the failure was acted on before it was stored: pod %s replaced by %s", crashing, got)
	}
	w.statusErr = nil
	w.mustReconcile() // stores the failure in the status (the failed revision already records it) and acts on it
	if f := w.ds().Status.RolloutFailure; f == nil || f.Action != daemonsetv1alpha1.RolloutFailureRollback {
		t.Fatalf("rolloutFailure = %+v, want a rollback", f)
	}
	w.settle()
	w.mustReconcile()
	w.settle()
	if got := w.podOn("a"); got == crashing {
		t.Fatalf("node a still runs the crash-looping pod %s after the rollback's passes", got)
	}
}
