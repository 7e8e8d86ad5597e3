package pipeline

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// qosClass is a pod's QoS class as the kubelet computes it, over every container (init and sidecar ones too), for
// cpu and memory: BestEffort when none asks for either, Guaranteed when every container limits both at its
// requests (a request defaults to its limit), else Burstable.
func qosClass(containers ...corev1.ResourceRequirements) corev1.PodQOSClass {
	any, all := false, true
	for _, r := range containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, requested := r.Requests[name]
			lim, limited := r.Limits[name]
			any = any || requested || limited
			if !limited || (requested && req.Cmp(lim) != 0) {
				all = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case all:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// The fetch and the hold keep the pod's QoS class the server's, and a ResourceQuota on limits finds the hold's set
// whenever the server asks for any cpu or memory.
func TestHoldResourcesKeepTheQoSClass(t *testing.T) {
	q := resource.MustParse
	for name, server := range map[string]corev1.ResourceRequirements{
		"best effort":                 {},
		"best effort with a GPU only": {Limits: corev1.ResourceList{"nvidia.com/gpu": q("1")}},
		"guaranteed by limits":        {Limits: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}},
		"guaranteed with a GPU": {
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi"), "nvidia.com/gpu": q("1")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi"), "nvidia.com/gpu": q("1")}},
		"burstable, a request":   {Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}},
		"burstable, limits only": {Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
		"burstable, limits above": {
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}},
	} {
		hold := holdResources(server)
		want := qosClass(server)
		if got := qosClass(server, cpuAndMemory(server), hold); got != want {
			t.Errorf("%s: the pod is %s with the fetch and the hold, %s without", name, got, want)
		}
		if want != corev1.PodQOSBestEffort && (hold.Limits.Cpu().IsZero() || hold.Limits.Memory().IsZero()) {
			t.Errorf("%s: the hold has no cpu or memory limit: a quota on limits refuses the pod (%+v)", name, hold)
		}
	}
}
