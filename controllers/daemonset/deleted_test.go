package daemonset

import (
	"testing"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A DaemonSet deleted while its pass runs (the cache still holds it) has no status to write: the write's NotFound
// is no error, which would be logged and retried until the cache caught up.
func TestAStatusWriteToADeletedDaemonSetIsNoError(t *testing.T) {
	w := newWorld(t, "a", "b")
	var ds daemonsetv1alpha1.DaemonSet
	if err := w.live.Get(w.ctx, w.key, &ds); err != nil {
		t.Fatal(err)
	}
	w.staleDS = ds.DeepCopy()
	if err := w.live.Delete(w.ctx, &ds); err != nil {
		t.Fatal(err)
	}
	before := w.statusWrites
	res, err := w.reconcile()
	if w.statusWrites == before {
		t.Fatal("the pass wrote no status: it proves nothing")
	}
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v; want nothing more to do", res, err)
	}
}

// remembered counts what the reconciler keeps about DaemonSets between passes, besides expectations.
func (w *world) remembered() int {
	w.r.backoff.mu.Lock()
	defer w.r.backoff.mu.Unlock()
	return len(w.r.backoff.entries)
}

// A DaemonSet that is gone, whichever way the reconciler learns it (its deletion seen, or only its absence), leaves
// nothing behind in the reconciler: its failed pods' back-off goes with it, as its expectations and pacing do.
func TestADeletedDaemonSetIsForgottenWhole(t *testing.T) {
	for name, seeDeletion := range map[string]bool{"deletion seen": true, "only its absence": false} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, "a", "b")
			w.mustReconcile()
			ds := w.ds()
			w.r.backoff.failed(backoffKey(ds, "rev", "a"), w.clock)
			if w.remembered() == 0 {
				t.Fatal("no back-off recorded: the test proves nothing")
			}
			if seeDeletion {
				ds.Finalizers = []string{"example.com/hold"}
				if err := w.live.Update(w.ctx, ds); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.live.Delete(w.ctx, ds); err != nil {
				t.Fatal(err)
			}
			if _, err := w.reconcile(); err != nil {
				t.Fatal(err)
			}
			if n := w.remembered(); n != 0 {
				t.Fatalf("%d back-off entries of the deleted DaemonSet are still kept", n)
			}
		})
	}
}
