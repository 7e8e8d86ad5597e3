package pipelinespec

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// The containers a model-fetching step's pod runs beside its server, from the controller's own image.
const (
	// FetchContainer is the init container that fetches the model: pipeline-controller fetch-model.
	FetchContainer = "fetch-model"
	// HoldContainer is the sidecar that holds the model in a shared cache while the pod runs:
	// pipeline-controller hold-model.
	HoldContainer = "hold-model"
)

// Fetcher is what the platform, not the step, puts into a step's fetch and hold containers: the controller's image
// and the fetch's environment (the operators' proxy and CA bundle).
type Fetcher struct {
	// Image runs the fetch and the hold: the controller's own.
	Image string
	// Env is the fetch's environment.
	Env []corev1.EnvVar
}

// Refresh gives a pod's fetch and hold containers the fetcher of today, and reports whether it changed anything.
// A step's Deployment keeps the fetcher it was written with (an upgrade would restart every step otherwise); its
// next pod takes today's when it is created. Nothing else in the pod is touched, and a fetcher without an image (a
// controller not configured to fetch) changes nothing.
func (f Fetcher) Refresh(pod *corev1.PodSpec) bool {
	if f.Image == "" {
		return false
	}
	changed := false
	for i := range pod.InitContainers {
		c := &pod.InitContainers[i]
		switch c.Name {
		case FetchContainer:
			if c.Image != f.Image || !equality.Semantic.DeepEqual(c.Env, f.Env) {
				c.Image, c.Env = f.Image, slices.Clone(f.Env)
				changed = true
			}
		case HoldContainer:
			if c.Image != f.Image {
				c.Image = f.Image
				changed = true
			}
		}
	}
	return changed
}
