package daemonset_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// valid is a DaemonSet the webhook admits as it is: one image, defaults for the rest.
func valid(name string) *daemonsetv1alpha1.DaemonSet {
	return &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: daemonsetv1alpha1.DaemonSetSpec{Image: "agent:v1"}}
}

// withContainer gives ds a template with container c in place of the image shorthand.
func withContainer(ds *daemonsetv1alpha1.DaemonSet, c corev1.Container) {
	ds.Spec.Image = ""
	ds.Spec.Template.Spec.Containers = []corev1.Container{c}
}

// rollingUpdate is ds's rolling update strategy, made when it has none.
func rollingUpdate(ds *daemonsetv1alpha1.DaemonSet) *daemonsetv1alpha1.RollingUpdateDaemonSet {
	if ds.Spec.UpdateStrategy.RollingUpdate == nil {
		ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{}
	}
	return ds.Spec.UpdateStrategy.RollingUpdate
}
