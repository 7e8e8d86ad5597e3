package sizer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// A writer that takes the fields back stops the forcing after fightLimit take-backs however far apart they come (the
// log counts, it keeps no clock: a GitOps tool's ten-minute syncs or a daily deploy trip it as surely as a tight
// loop); a new generation forces again; a status that says the sizer stopped at this generation keeps it stopped in
// a process that has no log yet (a new leader).
func TestTakeBacksAtAnyCadenceStopTheForcing(t *testing.T) {
	var f fightLog
	var force bool
	if f, force = f.beforeForcedWrite(4, false); !force {
		t.Fatal("the first forced write of a spec was not forced")
	}
	for i := range fightLimit {
		if f, force = f.beforeForcedWrite(4, false); !force {
			t.Fatalf("take-back %d was not forced", i+1)
		}
	}
	if _, force = f.beforeForcedWrite(4, false); force {
		t.Fatalf("forced again after %d take-backs", fightLimit)
	}
	if _, force = f.beforeForcedWrite(5, false); !force {
		t.Fatal("a new spec was not forced")
	}

	wls := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	wls.Status.Conditions = []metav1.Condition{{Type: sizerv1alpha1.ConditionConflict, Status: metav1.ConditionTrue,
		Reason: sizerv1alpha1.ReasonTakenBack, ObservedGeneration: 4}}
	r := &Reconciler{}
	if r.beforeForcedWrite("ns/web", wls) {
		t.Error("a new leader forced again though the status says the sizer stopped at this generation")
	}
	wls.Generation = 5
	if !r.beforeForcedWrite("ns/web", wls) {
		t.Error("a new spec was not forced after a stop at the old one")
	}
}
