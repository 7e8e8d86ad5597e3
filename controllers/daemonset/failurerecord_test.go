package daemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// The failure is recorded on the revision it names and on no other; a record that already says it is left alone; a
// record the pass no longer holds (the template moved on, the policy changed) or cannot read is taken off.
func TestFailureRecordWrites(t *testing.T) {
	rev := func(hash, annotation string) appsv1.ControllerRevision {
		r := appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + hash, Labels: map[string]string{RevisionLabel: hash}}}
		if annotation != "" {
			r.Annotations = map[string]string{daemonsetv1alpha1.RolloutFailureAnnotation: annotation}
		}
		return r
	}
	failure := &daemonsetv1alpha1.RolloutFailure{Revision: "bad", Action: daemonsetv1alpha1.RolloutFailureRollback, RolledBackTo: "good"}
	recorded := `{"revision":"bad","action":"Rollback","rolledBackTo":"good","generation":0,"failedNodes":0,"message":"","time":null}`
	names := func(w map[*appsv1.ControllerRevision]*daemonsetv1alpha1.RolloutFailure) map[string]bool {
		out := map[string]bool{}
		for r, f := range w {
			out[r.Name] = f != nil
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		revs    []appsv1.ControllerRevision
		failure *daemonsetv1alpha1.RolloutFailure
		want    map[string]bool // revision name: written (true) or taken off (false)
	}{
		{"a new failure is written on its revision", []appsv1.ControllerRevision{rev("good", ""), rev("bad", "")}, failure,
			map[string]bool{"agent-bad": true}},
		{"a record that says it already is left", []appsv1.ControllerRevision{rev("good", ""), rev("bad", recorded)}, failure,
			map[string]bool{}},
		{"the template moved on: the record goes", []appsv1.ControllerRevision{rev("bad", recorded), rev("new", "")}, nil,
			map[string]bool{"agent-bad": false}},
		{"an unreadable record goes", []appsv1.ControllerRevision{rev("bad", "{"), rev("good", "")}, nil,
			map[string]bool{"agent-bad": false}},
		{"a record naming another revision is rewritten", []appsv1.ControllerRevision{rev("bad", `{"revision":"other"}`)}, failure,
			map[string]bool{"agent-bad": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(failureRecordWrites(tc.revs, tc.failure))
			if len(got) != len(tc.want) {
				t.Fatalf("writes %v, want %v", got, tc.want)
			}
			for n, w := range tc.want {
				if g, ok := got[n]; !ok || g != w {
					t.Errorf("writes %v, want %v", got, tc.want)
				}
			}
		})
	}
	revs := []appsv1.ControllerRevision{rev("good", ""), rev("bad", recorded)}
	if f := recordedFailure(nil, revs, "bad"); f == nil || f.RolledBackTo != "good" {
		t.Errorf("recordedFailure from the revision = %+v", f)
	}
	if f := recordedFailure(nil, revs, "good"); f != nil {
		t.Errorf("a failure recorded on another revision was read for this one: %+v", f)
	}
}
