package pipeline

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// Probe is what `helm test` sends through the apiserver to prove it reaches these webhooks: a Pipeline every check
// admits, and one that only the validating webhook refuses (a step that sends its results to itself).
func Probe() admissioncheck.Probe {
	pipeline := func(next ...string) *inferencev1alpha1.Pipeline {
		return &inferencev1alpha1.Pipeline{Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs.invalid", "share": "/models"}},
			Steps: []inferencev1alpha1.Step{{Name: "probe", Image: "registry.invalid/probe:1", Next: next}}}}
	}
	return admissioncheck.Probe{
		Valid:   func() client.Object { return pipeline() },
		Invalid: func() client.Object { return pipeline("probe") },
		Refusal: "cannot feed itself",
	}
}
