package sizer

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// Every profile at replicas 0, 1, 2, 5 and 10: whether a budget is created, and whether it is safe.
func TestDecidePDB(t *testing.T) {
	type want struct {
		create, safe bool
		reason       string
	}
	ok := want{true, true, sizerv1alpha1.ReasonBudgetAllows}
	blocked := want{false, false, sizerv1alpha1.ReasonBudgetWouldBlock}
	none := want{false, true, sizerv1alpha1.ReasonBudgetNoReplicas}
	for profile, byReplicas := range map[sizerv1alpha1.DisruptionProfile]map[int32]want{
		// minAvailable 60%, rounded up: 1 of 1 and 2 of 2 leave nothing to evict.
		sizerv1alpha1.ProfileStateless: {0: none, 1: blocked, 2: blocked, 5: ok, 10: ok},
		// maxUnavailable 0 always blocks: refused unless allowed.
		sizerv1alpha1.ProfileSingleInstance: {0: none, 1: blocked, 2: blocked, 5: blocked, 10: blocked},
		sizerv1alpha1.ProfileQuorum:         {0: none, 1: ok, 2: ok, 5: ok, 10: ok},
		sizerv1alpha1.ProfileNone: {0: {false, true, sizerv1alpha1.ReasonBudgetNotRequested}, 1: {false, true, sizerv1alpha1.ReasonBudgetNotRequested},
			2: {false, true, sizerv1alpha1.ReasonBudgetNotRequested}, 5: {false, true, sizerv1alpha1.ReasonBudgetNotRequested}, 10: {false, true, sizerv1alpha1.ReasonBudgetNotRequested}},
	} {
		for replicas, w := range byReplicas {
			t.Run(fmt.Sprintf("%s/%d", profile, replicas), func(t *testing.T) {
				d := decidePDB(&sizerv1alpha1.DisruptionSpec{Profile: profile}, replicas)
				if d.create != w.create || d.safe != w.safe || d.reason != w.reason {
					t.Fatalf("got create=%v safe=%v %s (%s), want %+v", d.create, d.safe, d.reason, d.message, w)
				}
				if d.create && (d.minAvailable == nil) == (d.maxUnavailable == nil) {
					t.Fatalf("a budget needs exactly one of minAvailable and maxUnavailable: %+v", d)
				}
			})
		}
	}
}

func TestDecidePDBOverridesAndAllowance(t *testing.T) {
	d := decidePDB(&sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileSingleInstance, AllowBlockingDrains: true}, 1)
	if !d.create || d.safe || d.reason != sizerv1alpha1.ReasonBudgetBlockingByAsk {
		t.Fatalf("allowBlockingDrains: %+v", d)
	}
	d = decidePDB(&sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileStateless, MinAvailable: ptr.To(intstr.FromInt32(2))}, 3)
	if !d.create || !d.safe || d.minAvailable.IntValue() != 2 || d.maxUnavailable != nil {
		t.Fatalf("explicit minAvailable overrides the profile: %+v", d)
	}
	d = decidePDB(&sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileNone, MaxUnavailable: ptr.To(intstr.FromString("50%"))}, 3)
	if !d.create || d.maxUnavailable.String() != "50%" {
		t.Fatalf("explicit maxUnavailable with profile None: %+v", d)
	}
	if d := decidePDB(nil, 3); d.create || !d.safe {
		t.Fatalf("no disruption spec: %+v", d)
	}
	d = decidePDB(&sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileStateless}, 1)
	if want := "not created: minAvailable 60% (1 of 1) would allow no eviction with 1 replicas"; len(d.message) < len(want) || d.message[:len(want)] != want {
		t.Fatalf("message %q does not explain the refusal", d.message)
	}
}
