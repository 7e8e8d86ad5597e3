package daemonset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// The DaemonSet's own watch wakes the controller for a new spec and for a status that no longer stands for the
// generation (cleared, or restored from another), never for the controller's own status writes.
func TestSpecChangedOrStatusLost(t *testing.T) {
	ds := func(generation, observed int64, ready int32) *daemonsetv1alpha1.DaemonSet {
		return &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: generation},
			Status: daemonsetv1alpha1.DaemonSetStatus{ObservedGeneration: observed, NumberReady: ready}}
	}
	p := specChangedOrStatusLost()
	for name, tc := range map[string]struct {
		old, new *daemonsetv1alpha1.DaemonSet
		want     bool
	}{
		"its own status write":              {ds(3, 3, 1), ds(3, 3, 2), false},
		"a new spec":                        {ds(3, 3, 2), ds(4, 3, 2), true},
		"a status cleared":                  {ds(3, 3, 2), ds(3, 0, 0), true},
		"a status of another generation":    {ds(3, 3, 2), ds(3, 2, 2), true},
		"a label while the status lags":     {ds(4, 3, 2), ds(4, 3, 2), true},
		"an edit that keeps the generation": {ds(3, 3, 2), ds(3, 3, 0), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed %v, want %v", name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: ds(1, 0, 0)}) || !p.Delete(event.DeleteEvent{Object: ds(1, 1, 0)}) {
		t.Error("a creation or a deletion did not pass")
	}
}
