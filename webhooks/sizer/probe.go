package sizer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// Probe is what `helm test` sends through the apiserver to prove it reaches these webhooks: a WorkloadSizer every
// check admits, and one that only the validating webhook refuses (a request above its limit: quantity comparisons
// are too costly for CEL).
func Probe() admissioncheck.Probe {
	sizer := func() *sizerv1alpha1.WorkloadSizer {
		return &sizerv1alpha1.WorkloadSizer{Spec: sizerv1alpha1.WorkloadSizerSpec{
			TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: "keelson-admission-check"}, Size: ptr.To[int32](1)}}
	}
	return admissioncheck.Probe{
		Valid: func() client.Object { return sizer() },
		Invalid: func() client.Object {
			w := sizer()
			w.Spec.Resources = []sizerv1alpha1.ContainerResources{{ContainerName: "probe",
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}
			return w
		},
		Refusal: "must be at most its limit",
	}
}
