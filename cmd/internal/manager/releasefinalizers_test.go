package manager

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithoutFinalizer(t *testing.T) {
	for name, tc := range map[string]struct {
		in       []string
		wantKeep []string
		wantHad  bool
	}{
		"only ours":             {in: []string{"sizer.keelson.dev/release"}, wantKeep: []string{}, wantHad: true},
		"others kept, in order": {in: []string{"a/x", "sizer.keelson.dev/release", "b/y"}, wantKeep: []string{"a/x", "b/y"}, wantHad: true},
		"twice":                 {in: []string{"sizer.keelson.dev/release", "a/x", "sizer.keelson.dev/release"}, wantKeep: []string{"a/x"}, wantHad: true},
		"not ours":              {in: []string{"a/x"}, wantKeep: []string{"a/x"}, wantHad: false},
		"none":                  {in: nil, wantKeep: nil, wantHad: false},
		"a prefix is not ours":  {in: []string{"sizer.keelson.dev/release-x"}, wantKeep: []string{"sizer.keelson.dev/release-x"}, wantHad: false},
	} {
		t.Run(name, func(t *testing.T) {
			keep, had := withoutFinalizer(tc.in, "sizer.keelson.dev/release")
			if had != tc.wantHad {
				t.Errorf("had = %v, want %v", had, tc.wantHad)
			}
			if diff := cmp.Diff(tc.wantKeep, keep); diff != "" {
				t.Errorf("kept finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithoutFinalizerLeavesItsInputAlone(t *testing.T) {
	in := []string{"a/x", "sizer.keelson.dev/release", "b/y"}
	_, _ = withoutFinalizer(in, "sizer.keelson.dev/release")
	if diff := cmp.Diff([]string{"a/x", "sizer.keelson.dev/release", "b/y"}, in); diff != "" {
		t.Errorf("the input changed (-want +got):\n%s", diff)
	}
}

func TestRemainingPods(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, terminating bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	got := remainingPods([]corev1.Pod{
		pod("running", corev1.PodRunning, false),
		pod("terminating", corev1.PodRunning, true),
		pod("pending", corev1.PodPending, false),
		pod("unknown", corev1.PodUnknown, false),
		pod("evicted", corev1.PodFailed, false),
		pod("completed", corev1.PodSucceeded, false),
	})
	if diff := cmp.Diff([]string{"running", "terminating", "pending", "unknown"}, got); diff != "" {
		t.Errorf("remaining pods (-want +got):\n%s", diff)
	}
	if got := remainingPods(nil); len(got) != 0 {
		t.Errorf("no pods left %v", got)
	}
}
