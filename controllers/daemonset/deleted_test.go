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
