package pipelinespec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// Steps chain by default, or follow their next; an unknown next, a loop, a cycle or a name given twice is refused
// with its field path.
func TestWire(t *testing.T) {
	step := func(name string, next ...string) inferencev1alpha1.Step {
		return inferencev1alpha1.Step{Name: name, Image: "x", Next: next}
	}
	for name, tc := range map[string]struct {
		steps    []inferencev1alpha1.Step
		want     pipelinespec.Wiring
		entry    string
		errorHas string
	}{
		"chain by default": {steps: []inferencev1alpha1.Step{{Image: "a"}, {Image: "b"}, {Image: "c"}},
			want: pipelinespec.Wiring{"step-0": {"step-1"}, "step-1": {"step-2"}}, entry: "step-0"},
		"fan-out and fan-in": {steps: []inferencev1alpha1.Step{step("in", "left", "right"), step("left", "out"), step("right", "out"), step("out")},
			want: pipelinespec.Wiring{"in": {"left", "right"}, "left": {"out"}, "right": {"out"}}, entry: "in"},
		"unknown next":   {steps: []inferencev1alpha1.Step{step("a", "ghost")}, errorHas: "spec.steps[0].next[0]: Not found: \"ghost\""},
		"self loop":      {steps: []inferencev1alpha1.Step{step("a", "a")}, errorHas: "a step cannot feed itself"},
		"cycle":          {steps: []inferencev1alpha1.Step{step("a", "b"), step("b", "c"), step("c", "a")}, errorHas: "a -> b -> c -> a"},
		"duplicate name": {steps: []inferencev1alpha1.Step{step("a"), step("a")}, errorHas: "spec.steps[1].name: Duplicate value"},
	} {
		t.Run(name, func(t *testing.T) {
			w, errs := pipelinespec.Wire(tc.steps)
			if tc.errorHas != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.errorHas) {
					t.Fatalf("errors %v do not contain %q", errs, tc.errorHas)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, w); diff != "" {
				t.Fatalf("wiring (-want +got):\n%s", diff)
			}
			if got := pipelinespec.EntryStep(tc.steps, w); got != tc.entry {
				t.Fatalf("entry = %q, want %q", got, tc.entry)
			}
		})
	}
}
