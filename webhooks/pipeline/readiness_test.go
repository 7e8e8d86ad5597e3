package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// The webhook's own readiness checks (the CRD's CEL answers first when it is installed; these answer for a CRD
// that lacks it) name the field of each problem.
func TestValidateReadinessNamesTheField(t *testing.T) {
	httpGet := func(path string, port int32) *inferencev1alpha1.Readiness {
		return &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: path, Port: port}}
	}
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	for name, tc := range map[string]struct {
		step inferencev1alpha1.Step
		want []string
	}{
		"none":              {inferencev1alpha1.Step{}, nil},
		"a path":            {inferencev1alpha1.Step{Readiness: httpGet("/ready", 9000)}, nil},
		"open inference":    {inferencev1alpha1.Step{Readiness: &inferencev1alpha1.Readiness{Protocol: inferencev1alpha1.ReadinessOpenInference}}, nil},
		"relative path":     {inferencev1alpha1.Step{Readiness: httpGet("ready", 0)}, []string{"spec.steps[2].readiness.httpGet.path"}},
		"path with a space": {inferencev1alpha1.Step{Readiness: httpGet("/a b", 0)}, []string{"spec.steps[2].readiness.httpGet.path"}},
		"port out of range": {inferencev1alpha1.Step{Readiness: httpGet("/ready", 65536)}, []string{"spec.steps[2].readiness.httpGet.port"}},
		"neither":           {inferencev1alpha1.Step{Readiness: &inferencev1alpha1.Readiness{}}, []string{"spec.steps[2].readiness"}},
		"unknown protocol":  {inferencev1alpha1.Step{Readiness: &inferencev1alpha1.Readiness{Protocol: "grpc"}}, []string{"spec.steps[2].readiness.protocol"}},
		"both choices":      {inferencev1alpha1.Step{Readiness: &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/r"}, Protocol: inferencev1alpha1.ReadinessOpenInference}}, []string{"spec.steps[2].readiness"}},
		"with a full probe": {inferencev1alpha1.Step{Readiness: httpGet("/ready", 0), ReadinessProbe: exec}, []string{"spec.steps[2].readiness"}},
		"only a full probe": {inferencev1alpha1.Step{ReadinessProbe: exec}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			p := &inferencev1alpha1.Pipeline{Spec: inferencev1alpha1.PipelineSpec{Steps: []inferencev1alpha1.Step{{}, {}, tc.step}}}
			var got []string
			for _, e := range validateReadiness(field.NewPath("spec", "steps").Index(2).Child("readiness"), p.Spec.Steps[2]) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("field paths (-want +got):\n%s", diff)
			}
		})
	}
}
