package daemonset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/expectations"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

// A creation event that lands after the cache answered the pod list, but before the pass asks the expectations,
// must not make that stale list look trustworthy: the pass plans nothing, and no node gets a second pod.
func TestExpectationsAreAskedBeforeTheCacheIsRead(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile() // creates a pod per node; their events have not come yet
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("first pass: pods per node %v, want %v", got, want)
	}
	w.hideAll()
	w.onPodList = w.deliverCreations // the events land while the stale list is being answered
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("a pass planned from a stale list: pods per node %v, want %v", got, want)
	}
	w.settle()
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("after the cache caught up: pods per node %v, want %v", got, want)
	}
}

// A newly elected leader whose warm cache has not seen the pods the old leader created a moment ago creates no
// second pod on their nodes: its first pass reads the pods live and waits for the cache to catch up.
func TestNewLeaderDoesNotTrustALaggingCache(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile() // the old leader creates a pod per node, then dies
	w.r = w.newReconciler()
	w.hideAll() // the new leader's cache has not seen them
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("the new leader's first pass: pods per node %v, want %v", got, want)
	}
	w.mustReconcile() // woken again before the cache caught up: still held back
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("the new leader's second pass: pods per node %v, want %v", got, want)
	}
	w.settle()
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("after the cache caught up: pods per node %v, want %v", got, want)
	}
	if st := w.ds().Status; st.DesiredNumberScheduled != 2 || st.CurrentNumberScheduled != 2 {
		t.Fatalf("status after the handover: %+v", st)
	}
}

func TestCacheLag(t *testing.T) {
	owned := func(uid types.UID, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "daemonset.keelson.dev/v1alpha1", Kind: "DaemonSet", UID: "ds", Controller: ptrTrue()}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return p
	}
	other := owned("x", false)
	other.OwnerReferences[0].UID = "other-ds"
	// "patched" was updated in place to revision r2; the cache still shows r1.
	patchedLive, patchedCached := owned("patched", false), owned("patched", false)
	patchedLive.Labels, patchedCached.Labels = map[string]string{RevisionLabel: "r2"}, map[string]string{RevisionLabel: "r1"}
	live := []corev1.Pod{owned("kept", false), owned("new", false), owned("new-deleting", true), owned("deleting", true), other, patchedLive}
	cachedPods := []corev1.Pod{owned("kept", false), owned("deleting", false), owned("gone", false), owned("seen-deleting", true), patchedCached}
	var cached []*corev1.Pod
	for i := range cachedPods {
		cached = append(cached, &cachedPods[i])
	}
	lag := cacheLag("ds", live, cached)
	if len(lag.uncached) != 2 {
		t.Errorf("uncached = %v, want 2 (new, new-deleting)", lag.uncached)
	}
	if want := []types.UID{"deleting", "gone"}; !cmp.Equal(lag.deletions, want) {
		t.Errorf("deletions = %v, want %v", lag.deletions, want)
	}
	if want := map[types.UID]string{"patched": "r2"}; !cmp.Equal(lag.updates, want) {
		t.Errorf("updates = %v, want %v", lag.updates, want)
	}
}

func ptrTrue() *bool { b := true; return &b }

// Status is written so that it never conflicts with this controller's own last write, however far the cache lags
// it; a status equal to the last one written is not written again; counters that drop to 0 are written as 0.
func TestStatusWritesFromALaggingCache(t *testing.T) {
	w := newWorld(t, "a")
	w.staleDS = w.ds() // the cache will not see the status writes
	w.mustReconcile()
	w.settle()
	if _, err := w.reconcile(); err != nil {
		t.Fatalf("a status write from a lagging cache failed: %v", err)
	}
	writes := w.statusWrites
	if st := w.ds().Status; st.CurrentNumberScheduled != 1 || st.DesiredNumberScheduled != 1 {
		t.Fatalf("stored status %+v, want 1 desired and 1 current", st)
	}
	w.mustReconcile()
	if w.statusWrites != writes {
		t.Fatalf("the status last written was written again (%d writes, want %d)", w.statusWrites, writes)
	}

	pod := w.podOn("a")
	w.setPod(pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	w.mustReconcile()
	if st := w.ds().Status; st.NumberReady != 1 || st.NumberAvailable != 1 || st.NumberUnavailable != 0 {
		t.Fatalf("stored status after the pod became ready: %+v", st)
	}
	w.setPod(pod, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	})
	w.mustReconcile()
	if st := w.ds().Status; st.NumberReady != 0 || st.NumberAvailable != 0 || st.NumberUnavailable != 1 {
		t.Fatalf("stored status after the pod became unready: %+v (counters at 0 must be written)", st)
	}
}

func TestStatusPatchStatesEveryField(t *testing.T) {
	st := computeStatus(daemonsetv1alpha1.DaemonSetStatus{}, nil, statusInput{generation: 2, updateHash: "h", currentHash: "h", now: now})
	body, err := statuswrite.Patch(&st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"desiredNumberScheduled":0`, `"numberAvailable":null`, `"numberUnavailable":null`,
		`"updatedNumberScheduled":null`, `"collisionCount":null`, `"observedGeneration":2`, `"conditions":[`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("status patch %s lacks %s", body, want)
		}
	}
}

// An orphan labelled for the DaemonSet is adopted instead of getting a twin; a controlled pod relabelled out of the
// selector is released, and its node gets a new pod.
func TestOrphansAreAdoptedAndStrayPodsReleased(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile()
	w.settle()
	orphan := w.podOn("a")
	w.setPod(orphan, func(p *corev1.Pod) { p.OwnerReferences = nil }) // as kubectl delete --cascade=orphan leaves it
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Fatalf("after re-creation: pods per node %v, want %v", got, want)
	}
	if w.podOn("a") != orphan {
		t.Fatalf("the orphan was not adopted")
	}

	stray := w.podOn("b")
	w.setPod(stray, func(p *corev1.Pod) { p.Labels[daemonsetv1alpha1.NameLabel] = "debugging" })
	w.mustReconcile()
	for _, p := range w.pods() {
		if p.Name == stray && metav1.GetControllerOf(&p) != nil {
			t.Fatalf("the relabelled pod is still controlled: %v", p.OwnerReferences)
		}
	}
	w.settle()
	w.mustReconcile()
	if got, want := w.podsPerNode(), map[string]int{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		for _, p := range w.pods() {
			t.Logf("%s %v %v", p.Name, p.Labels, p.OwnerReferences)
		}
		t.Fatalf("after the release: pods per node %v, want %v", got, want)
	}
}

// The failed-pod backoff belongs to the template that failed: a new template is tried at once.
func TestFailureBackoffResetsWithANewTemplate(t *testing.T) {
	w := newWorld(t, "a")
	w.step = 0 // all passes at one moment: well within any backoff
	pass := func() { w.mustReconcile(); w.settle() }
	fail := func() string {
		name := w.podOn("a")
		w.setPod(name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
		return name
	}
	pass()
	fail()
	pass() // deletes the failed pod at once; the node's backoff starts
	pass() // replaces it
	failed := fail()
	pass()
	if w.podOn("a") != failed {
		t.Fatalf("the second failed pod was replaced within its backoff")
	}

	ds := w.ds()
	ds.Spec.Image = "agent:v2" // the fix
	ds.Generation++
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	pass()
	for _, p := range w.pods() {
		if p.Name == failed {
			t.Fatalf("the failed pod still waits for the old template's backoff under the new template")
		}
	}
	pass()
	if got, want := w.podsPerNode(), map[string]int{"a": 1}; !cmp.Equal(got, want) {
		t.Fatalf("pods per node %v, want %v", got, want)
	}
}

func TestSplitPodsTreatsDeletedTerminalPodsAsGone(t *testing.T) {
	pin := func(p *corev1.Pod, node string, deleting bool) *corev1.Pod {
		p.Spec.NodeName = node
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Finalizers = []string{"example.com/hold"}
		}
		return p
	}
	pods, terminating := splitPods([]*corev1.Pod{
		pin(testPod("running", newRev, available), "a", false),
		pin(testPod("stopping", newRev, available), "b", true),
		pin(testPod("failed-held", newRev, failed), "c", true),
		pin(testPod("failed", newRev, failed), "d", false),
	})
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	if want := []string{"running", "failed"}; !cmp.Equal(names, want) {
		t.Errorf("pods = %v, want %v", names, want)
	}
	if want := map[string]int{"b": 1}; !cmp.Equal(terminating, want) {
		t.Errorf("terminating = %v, want %v (a terminal pod held by a finalizer must not block its node)", terminating, want)
	}
}

// A pass held back by unmet expectations requeues for when they expire: should the awaited events never come, a
// quiet cluster still wakes the DaemonSet.
func TestHeldBackPassRequeuesForTheExpectationsTTL(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.mustReconcile() // creates a pod per node; their events never come
	w.hideAll()
	res := w.mustReconcile()
	if res.RequeueAfter <= 0 || res.RequeueAfter > expectations.DefaultTTL {
		t.Fatalf("a held-back pass requeues after %v, want within the expectations' TTL %v", res.RequeueAfter, expectations.DefaultTTL)
	}
}

// A status is skipped only when it equals the one this process last wrote, not the cached one: a cache that still
// shows an older write must not make a needed write look done (cache 1 ready, written 0, the pod ready again).
func TestStatusSkipComparesWithTheLastWrite(t *testing.T) {
	w := newWorld(t, "a")
	ds := w.ds()
	ds.Spec.MinReadySeconds = 3600 // readiness moves numberReady only: the conditions stay as they are
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	w.mustReconcile()
	w.settle()
	pod := w.podOn("a")
	ready := func(ready bool) {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		w.setPod(pod, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status,
				LastTransitionTime: metav1.Time{Time: w.clock}}}
		})
	}
	ready(true)
	w.mustReconcile()
	if st := w.ds().Status; st.NumberReady != 1 || st.NumberAvailable != 0 {
		t.Fatalf("stored status after the pod became ready: %+v", st)
	}
	// A restarted process starts from the stored status (its conditions' times as stored), so its statuses can
	// equal the cached one exactly.
	w.r = w.newReconciler()
	w.mustReconcile()
	w.staleDS = w.ds() // the cache shows 1 ready from now on
	ready(false)
	w.mustReconcile()
	if st := w.ds().Status; st.NumberReady != 0 {
		t.Fatalf("stored status after the pod became unready: %+v", st)
	}
	ready(true)
	w.mustReconcile()
	if st := w.ds().Status; st.NumberReady != 1 {
		t.Fatalf("a status equal to the cached one but not to the last write was skipped: stored numberReady %d, want 1", st.NumberReady)
	}
}

// podsOn counts every pod stored on node that is not being deleted, whoever controls it.
func (w *world) podsOn(node string) int {
	n := 0
	for _, p := range w.pods() {
		if PodNode(&p) == node && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// orphanOnA makes the pod on node "a" an orphan, as kubectl delete --cascade=orphan leaves it, and returns its name.
func (w *world) orphanOnA() string {
	w.mustReconcile()
	w.settle()
	orphan := w.podOn("a")
	w.setPod(orphan, func(p *corev1.Pod) { p.OwnerReferences = nil })
	return orphan
}

// An orphan whose adoption meets a conflict still occupies its node: no second pod goes beside it, and a later
// pass adopts it.
func TestAnOrphanNotAdoptedYetOccupiesItsNode(t *testing.T) {
	w := newWorld(t, "a", "b")
	orphan := w.orphanOnA()
	// The orphan changes after the cache listed it (its owned pods first, then the orphans): the adoption conflicts.
	w.onPodList = func() {
		w.onPodList = func() {
			w.setPod(orphan, func(p *corev1.Pod) { p.Annotations = map[string]string{"touched": "yes"} })
		}
	}
	res := w.mustReconcile()
	if n := w.podsOn("a"); n != 1 {
		t.Fatalf("a failed adoption left the orphan's node looking empty: %d pods on it, want 1", n)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > conflictRequeue {
		t.Fatalf("a failed adoption requeues after %v, want at most %v", res.RequeueAfter, conflictRequeue)
	}
	w.mustReconcile()
	if w.podOn("a") != orphan || w.podsOn("a") != 1 {
		t.Fatalf("the orphan was not adopted by the next pass")
	}
}

// When the live read before adopting finds the DaemonSet gone or being deleted (the cache lags), the pass stops
// without planning: no error, and no pod beside the orphan.
func TestAdoptionStopsForADaemonSetGoneOrGoing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(w *world, ds *daemonsetv1alpha1.DaemonSet)
	}{
		{"gone", func(w *world, ds *daemonsetv1alpha1.DaemonSet) {
			if err := w.live.Delete(w.ctx, ds); err != nil {
				t.Fatal(err)
			}
		}},
		{"being deleted", func(w *world, ds *daemonsetv1alpha1.DaemonSet) {
			ds.Finalizers = []string{"example.com/hold"}
			if err := w.live.Update(w.ctx, ds); err != nil {
				t.Fatal(err)
			}
			if err := w.live.Delete(w.ctx, ds); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "a", "b")
			w.orphanOnA()
			ds := w.ds()
			w.staleDS = ds.DeepCopy() // the cache has not seen the deletion
			tc.delete(w, ds)
			if _, err := w.reconcile(); err != nil {
				t.Fatalf("a pass for a DaemonSet gone or going failed: %v", err)
			}
			if n := w.podsOn("a"); n != 1 {
				t.Fatalf("a pass for a DaemonSet gone or going planned: %d pods on the orphan's node, want 1", n)
			}
		})
	}
}
