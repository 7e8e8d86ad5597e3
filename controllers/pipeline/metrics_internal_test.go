package pipeline

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

func stepsIn(phases ...string) []inferencev1alpha1.StepStatus {
	var out []inferencev1alpha1.StepStatus
	for i := 0; i < len(phases); i += 2 {
		out = append(out, inferencev1alpha1.StepStatus{Name: phases[i], Phase: inferencev1alpha1.Phase(phases[i+1])})
	}
	return out
}

func TestStepChangesOf(t *testing.T) {
	for name, tc := range map[string]struct {
		old, cur []inferencev1alpha1.StepStatus
		want     stepChanges
	}{
		"new pipeline":        {nil, stepsIn("a", "Pending", "b", "Progressing"), stepChanges{started: []string{"a", "b"}}},
		"steps become ready":  {stepsIn("a", "Progressing", "b", "Progressing"), stepsIn("a", "Ready", "b", "Progressing"), stepChanges{readied: []string{"a"}}},
		"a step leaves ready": {stepsIn("a", "Ready"), stepsIn("a", "Degraded"), stepChanges{started: []string{"a"}}},
		"steady":              {stepsIn("a", "Ready", "b", "Failed"), stepsIn("a", "Ready", "b", "Failed"), stepChanges{}},
		"a step is removed":   {stepsIn("a", "Ready", "b", "Pending"), stepsIn("a", "Ready"), stepChanges{stopped: []string{"b"}}},
		"deleting":            {stepsIn("a", "Progressing"), stepsIn("a", "Deleting"), stepChanges{stopped: []string{"a"}}},
		// Ready at once (it was created Ready, say after a restart of this process): nothing to measure from.
		"new and ready": {nil, stepsIn("a", "Ready"), stepChanges{readied: []string{"a"}}},
	} {
		got := stepChangesOf(tc.old, tc.cur)
		for _, l := range [][]string{got.started, got.readied, got.stopped} {
			sort.Strings(l)
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(stepChanges{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// A step is measured from when this process saw it start to when it is Ready; one whose start it did not see is
// not measured.
func TestStepTimeToReadyIsMeasuredFromTheStartThisProcessSaw(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{UID: "p1"}}
	status := func(steps ...string) inferencev1alpha1.PipelineStatus {
		return inferencev1alpha1.PipelineStatus{Steps: stepsIn(steps...)}
	}
	count := func() uint64 { n, _ := histogram(t); return n }
	before, sumBefore := histogram(t)
	measureSteps(p, status(), status("a", "Pending", "b", "Progressing"), t0)
	measureSteps(p, status("a", "Pending", "b", "Progressing"), status("a", "Progressing", "b", "Progressing"), t0.Add(time.Minute))
	measureSteps(p, status("a", "Progressing", "b", "Progressing"), status("a", "Ready", "b", "Progressing"), t0.Add(2*time.Minute))
	if got := count() - before; got != 1 {
		t.Fatalf("%d observations after one step became ready, want 1", got)
	}
	if _, sum := histogram(t); sum-sumBefore != 120 {
		t.Fatalf("observed %vs, want 120s: from the step's creation to its readiness", sum-sumBefore)
	}
	// A pipeline seen first mid-way (a new leader): its step's start is unknown, so its readiness is not measured.
	q := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{UID: "p2"}}
	measureSteps(q, status("a", "Progressing"), status("a", "Ready"), t0.Add(3*time.Minute))
	if got := count() - before; got != 1 {
		t.Fatalf("a step whose start this process did not see was measured (%d observations)", got)
	}
	// A deleted pipeline's clocks go.
	p.DeletionTimestamp = &metav1.Time{Time: t0}
	measureSteps(p, status("a", "Ready", "b", "Progressing"), status("a", "Deleting", "b", "Deleting"), t0.Add(4*time.Minute))
	steps.mu.Lock()
	defer steps.mu.Unlock()
	for k := range steps.since {
		if k[:3] == "p1/" {
			t.Errorf("clock %s outlived its pipeline", k)
		}
	}
}

// histogram is the number and sum of observations of keelson_pipeline_step_time_to_ready_seconds.
func histogram(t *testing.T) (uint64, float64) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "keelson_pipeline_step_time_to_ready_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("keelson_pipeline_step_time_to_ready_seconds is not registered")
	return 0, 0
}

// A pipeline is at fault, by name, for each Failed or Degraded step (the collector sums them by phase).
func TestFaultsCountFailingSteps(t *testing.T) {
	p := inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "chat"}}
	p.Status.Steps = stepsIn("a", "Ready", "b", "Failed", "c", "Progressing", "d", "Degraded", "e", "Failed")
	key, got := faults(p)
	if key.String() != "ml/chat" {
		t.Errorf("named %s", key)
	}
	want := []string{"Failed", "Degraded", "Failed"}
	var reasons []string
	for _, f := range got {
		reasons = append(reasons, f.Reason)
	}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
