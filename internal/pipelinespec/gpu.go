package pipelinespec

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// migPrefix names NVIDIA's MIG slices (nvidia.com/mig-1g.5gb, …): a slice is a GPU to the step and to the node,
// though its name does not say "gpu".
const migPrefix = "nvidia.com/mig-"

// IsGPU reports whether a resource is a GPU or a slice of one: any extended resource named like a GPU
// (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915) and NVIDIA's MIG slices.
func IsGPU(name corev1.ResourceName) bool {
	n := strings.ToLower(string(name))
	return strings.Contains(n, "gpu") || strings.HasPrefix(n, migPrefix)
}

// WantsGPU reports whether the step asks for a GPU (or a MIG slice of one).
func WantsGPU(s inferencev1alpha1.Step) bool {
	for _, list := range []corev1.ResourceList{s.Resources.Limits, s.Resources.Requests} {
		for name, q := range list {
			if IsGPU(name) && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// GPUAsks is what the step asks of each GPU resource: its limit, else its request (the apiserver requires the two
// to be equal for extended resources, and defaults a missing request to the limit).
func GPUAsks(s inferencev1alpha1.Step) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range []corev1.ResourceList{s.Resources.Requests, s.Resources.Limits} {
		for name, q := range list {
			if IsGPU(name) && !q.IsZero() {
				out[name] = q
			}
		}
	}
	return out
}
