package daemonset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// Probe is what `helm test` sends through the apiserver to prove it reaches these webhooks: a DaemonSet every check
// admits, and one that only the validating webhook refuses (a surge of a template that binds a hostPort).
func Probe() admissioncheck.Probe {
	template := func() *daemonsetv1alpha1.DaemonSet {
		return &daemonsetv1alpha1.DaemonSet{Spec: daemonsetv1alpha1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.invalid/probe:1"}}}}}}
	}
	return admissioncheck.Probe{
		Valid: func() client.Object { return template() },
		Invalid: func() client.Object {
			ds := template()
			ds.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
			surge, none := intstr.FromInt32(1), intstr.FromInt32(0)
			ds.Spec.UpdateStrategy = daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
				RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxSurge: &surge, MaxUnavailable: &none}}
			return ds
		},
		Refusal: "binds a hostPort",
	}
}
