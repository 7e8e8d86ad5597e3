package sizer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
)

// A conflict is counted once its status is written: a pass whose status write fails counts nothing (the next
// pass sees the same transition again and counts it then), and a pass that still sees it counts nothing more.
func TestConflictsAreCountedOnceTheirStatusIsWritten(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := sizerv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sizerOf := func(name string, created time.Time) *sizerv1alpha1.WorkloadSizer {
		return &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(created)},
			Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	}
	now := time.Now().Truncate(time.Second)
	older, newer := sizerOf("older", now.Add(-time.Hour)), sizerOf("newer", now)
	refuse := true
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(older, newer).
		WithStatusSubresource(&sizerv1alpha1.WorkloadSizer{}).
		WithIndex(&sizerv1alpha1.WorkloadSizer{}, targetIndex, func(o client.Object) []string {
			ref := o.(*sizerv1alpha1.WorkloadSizer).Target()
			return []string{targetKey(ref.Kind, ref.Name)}
		}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if refuse {
				return errors.New("the apiserver is away")
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}}).Build()
	r := &Reconciler{Client: c, APIReader: c, pacer: pacing.New(statusInterval)}
	counted := conflictsTotal.WithLabelValues(sizerv1alpha1.ReasonAnotherSizer)
	before := testutil.ToFloat64(counted)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(newer)}

	for i, step := range []struct {
		refuse bool
		want   float64
	}{
		{true, 0},  // the status saying Conflict is not written: nothing counted
		{true, 0},  // nor on the retry that fails again
		{false, 1}, // written: counted once
		{false, 1}, // still in conflict: nothing new
	} {
		refuse = step.refuse
		_, err := r.Reconcile(ctx, req)
		if (err != nil) != step.refuse {
			t.Fatalf("pass %d: %v", i, err)
		}
		if got := testutil.ToFloat64(counted) - before; got != step.want {
			t.Errorf("pass %d: %v conflicts counted, want %v", i, got, step.want)
		}
	}
	var got sizerv1alpha1.WorkloadSizer
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if cond := conditionOf(got.Status.Conditions, sizerv1alpha1.ConditionConflict); cond == nil || cond.Reason != sizerv1alpha1.ReasonAnotherSizer {
		t.Fatalf("the written status's Conflict condition is %+v, want %s", cond, sizerv1alpha1.ReasonAnotherSizer)
	}
}

// conditionOf returns the condition of type t, or nil.
func conditionOf(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
