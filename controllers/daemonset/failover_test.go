package daemonset

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// A new leader's first pass lists the pods live, then reads its cache. A pod being deleted that is gone between the
// two reads (its deletion already in the cache) is not a creation the cache has yet to see: expecting one that never
// comes would hold every pass back until the expectations expire, minutes later, with nothing created meanwhile.
func TestAPodGoneBetweenTheLiveListAndTheCacheReadIsNotAwaited(t *testing.T) {
	w := newWorld(t, "a")
	w.mustReconcile()
	w.settle()
	doomed := w.podOn("a")
	w.setPod(doomed, func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} })
	var pod corev1.Pod
	if err := w.live.Get(w.ctx, client.ObjectKey{Namespace: worldNamespace, Name: doomed}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := w.live.Delete(w.ctx, &pod); err != nil { // terminating, held by its finalizer
		t.Fatal(err)
	}
	w.settle()

	w.r = w.newReconciler()    // a new leader
	w.beforePodList = func() { // between its live list and its cache read, the pod goes for good
		var p corev1.Pod
		if err := w.live.Get(w.ctx, client.ObjectKey{Namespace: worldNamespace, Name: doomed}, &p); err != nil {
			t.Fatal(err)
		}
		p.Finalizers = nil
		if err := w.live.Update(w.ctx, &p); err != nil { // the last finalizer off a deleted pod: it is gone
			t.Fatal(err)
		}
		w.settle()
	}
	if err := w.live.Create(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}); err != nil {
		t.Fatal(err)
	}
	w.mustReconcile()
	w.settle()
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("pods per node %v, want %v: the new leader waits for a pod that is gone", got, want)
	}
}

// A delete the apiserver fails does not end the pass: the creations on other nodes go ahead (a new node does not
// wait for another node's old pod), and the failure is still returned, so the pass is retried.
func TestAFailedDeleteDoesNotHoldBackTheRestOfThePass(t *testing.T) {
	w := newWorld(t, "a")
	w.mustReconcile()
	w.settle()
	if err := w.live.Delete(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); err != nil {
		t.Fatal(err) // its pod is now misscheduled: to be deleted
	}
	if err := w.live.Create(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}); err != nil {
		t.Fatal(err)
	}
	w.deleteErr = apierrors.NewServiceUnavailable("etcd is slow")
	if _, err := w.reconcile(); err == nil {
		t.Fatal("the failed delete was not reported")
	}
	if got := w.podsPerNode()["b"]; got != 1 {
		t.Fatalf("node b has %d pods: the failed delete held back its creation", got)
	}
}

// Nor does a failed delete hold back an update in place in the same pass (its pod's gate open, so the update is
// one patch): the pass makes every other write it planned, and reports the failure.
func TestAFailedDeleteDoesNotHoldBackAnUpdateInPlace(t *testing.T) {
	w := newWorld(t, "a", "b")
	ds := w.ds()
	one := intstr.FromInt32(1)
	ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one,
		InPlace: daemonsetv1alpha1.InPlaceIfPossible}
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	w.mustReconcile()
	w.settle()
	for _, n := range []string{"a", "b"} {
		w.setPod(w.podOn(n), func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(w.clock.Add(-time.Hour))}, {Type: InPlaceReadyCondition, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "agent:v1", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		})
	}
	w.mustReconcile()
	if err := w.live.Delete(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); err != nil {
		t.Fatal(err) // its pod is now misscheduled: to be deleted
	}
	ds = w.ds()
	ds.Spec.Image, ds.Generation = "agent:v2", ds.Generation+1
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	w.deleteErr = apierrors.NewServiceUnavailable("etcd is slow")
	if _, err := w.reconcile(); err == nil {
		t.Fatal("the failed delete was not reported")
	}
	var b corev1.Pod
	if err := w.live.Get(w.ctx, client.ObjectKey{Namespace: worldNamespace, Name: w.podOn("b")}, &b); err != nil {
		t.Fatal(err)
	}
	if b.Spec.Containers[0].Image != "agent:v2" {
		t.Fatalf("node b's pod runs %s: the failed delete held back its update in place", b.Spec.Containers[0].Image)
	}
}

// A DaemonSet deleted and created again under the same name, faster than this process saw the deletion, is a new
// one: what was expected of the old one's pods (creations whose events may never come, their owner gone) does not
// hold its passes back for the expectations' five minutes.
func TestADaemonSetCreatedAgainDoesNotInheritExpectations(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile() // creations expected; their events are not delivered
	old := w.ds()
	if err := w.live.Delete(w.ctx, old); err != nil {
		t.Fatal(err)
	}
	fresh := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, UID: "ds-uid-2",
		Generation: 1}, Spec: old.Spec}
	if err := w.live.Create(w.ctx, fresh); err != nil {
		t.Fatal(err)
	}
	w.mustReconcile()
	n := 0
	for _, p := range w.pods() {
		if metav1.IsControlledBy(&p, fresh) {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the new DaemonSet has %d pods, want 2: it waits on the old one's expectations", n)
	}
}

// The controller creates no pod it would not select on its next pass: its pods carry its own labels over the
// template's, so a selector on one of those with another value (or on the revision hash) matches none of them.
func TestASelectorMustSelectThePodsAsTheControllerLabelsThem(t *testing.T) {
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}
	for name, tc := range map[string]struct {
		selector map[string]string
		labels   map[string]string
		mismatch bool
	}{
		"the template's own label":        {map[string]string{"app": "agent"}, map[string]string{"app": "agent"}, false},
		"a typo":                          {map[string]string{"app": "agent"}, map[string]string{"app": "agnet"}, true},
		"a label the controller rewrites": {map[string]string{commonlabels.PartOf: "myplatform"}, map[string]string{commonlabels.PartOf: "myplatform"}, true},
		"the name label":                  {map[string]string{daemonsetv1alpha1.NameLabel: "agent"}, map[string]string{daemonsetv1alpha1.NameLabel: "agent"}, false},
		"the revision hash":               {map[string]string{RevisionLabel: "a"}, map[string]string{RevisionLabel: "a"}, true},
	} {
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: tc.selector}
		ds.Spec.Template.Labels = tc.labels
		if got := selectorMismatch(ds, EffectiveTemplate(ds)); (got != "") != tc.mismatch {
			t.Errorf("%s: mismatch %q, want one: %v", name, got, tc.mismatch)
		}
	}
}
