package daemonset

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A DaemonSet stored with a selector that does not select its template's labels (stored before the apiserver's rules
// refused it, or past them) gets no pod: every pod made for it would go unseen by the next pass, and another be made
// in its place, without end (526 pods in 20 s on 20 nodes). Its status says why, with both fields, pass after pass.
func TestAStoredSelectorMismatchCreatesNoPod(t *testing.T) {
	w := newWorld(t, "a", "b")
	ds := w.ds()
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds.Spec.Template.Labels = map[string]string{"app": "agnet"}
	if err := w.live.Update(w.ctx, ds); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.mustReconcile()
		w.settle()
	}
	if pods := w.pods(); len(pods) != 0 {
		t.Fatalf("%d pods made for a DaemonSet whose selector does not select them", len(pods))
	}
	st := w.ds().Status
	for _, ty := range []string{daemonsetv1alpha1.ConditionReady, daemonsetv1alpha1.ConditionProgressing} {
		c := meta.FindStatusCondition(st.Conditions, ty)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != daemonsetv1alpha1.ReasonSelectorMismatch ||
			!strings.Contains(c.Message, "spec.selector") || !strings.Contains(c.Message, "spec.template.metadata.labels") {
			t.Errorf("condition %s: %+v; want False, %s, naming spec.selector and spec.template.metadata.labels", ty, c,
				daemonsetv1alpha1.ReasonSelectorMismatch)
		}
	}
}
