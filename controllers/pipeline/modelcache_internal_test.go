package pipeline

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The hold's resources keep the pod's QoS class the server's: BestEffort, Guaranteed or Burstable.
func TestHoldResourcesKeepTheQoSClass(t *testing.T) {
	q := resource.MustParse
	for name, tc := range map[string]struct {
		server             corev1.ResourceRequirements
		requests, limits   int
		limitsEqualRequest bool
	}{
		"best effort":                 {corev1.ResourceRequirements{}, 0, 0, false},
		"best effort with a GPU only": {corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q("1")}}, 0, 0, false},
		"guaranteed by limits": {corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}}, 2, 2, true},
		"guaranteed": {corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}}, 2, 2, true},
		"burstable": {corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}, 2, 1, false},
		"burstable, limits above requests": {corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}}, 2, 1, false},
	} {
		r := holdResources(tc.server)
		if len(r.Requests) != tc.requests || len(r.Limits) != tc.limits {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		for res, limit := range r.Limits {
			if req := r.Requests[res]; tc.limitsEqualRequest && req.Cmp(limit) != 0 {
				t.Errorf("%s: %s requests %s, limited at %s", name, res, req.String(), limit.String())
			}
		}
	}
}
