package sizer_test

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// A target the sizer created from spec.template follows the template: a variable or a limit removed from it leaves
// the Deployment, and what stays in the template stays in the Deployment.
func TestACreatedTargetFollowsItsTemplate(t *testing.T) {
	s := newScenario(t)
	startController(t)
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "made"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Env: []corev1.EnvVar{{Name: "KEPT", Value: "1"}, {Name: "DROPPED", Value: "2"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
		}}},
	}
	s.sizer("made", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("made"), Template: template, Size: ptr.To[int32](1)})
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "made"}, &appsv1.Deployment{})
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(s.envOf("made"), timeout, poll).Should(And(HaveKeyWithValue("KEPT", "1"), HaveKeyWithValue("DROPPED", "2")))
	limits := func() corev1.ResourceList {
		return s.getDeployment("made").Spec.Template.Spec.Containers[0].Resources.Limits
	}
	s.g.Expect(limits()).To(HaveKey(corev1.ResourceEphemeralStorage))

	s.update("made", func(w *sizerv1alpha1.WorkloadSizer) {
		c := &w.Spec.Template.Spec.Containers[0]
		c.Env = c.Env[:1]
		c.Resources.Limits = nil
	})
	s.g.Eventually(s.envOf("made"), timeout, poll).ShouldNot(HaveKey("DROPPED"), "a variable removed from the template stayed")
	s.g.Expect(s.envOf("made")()).To(HaveKeyWithValue("KEPT", "1"))
	s.g.Eventually(limits, timeout, poll).ShouldNot(HaveKey(corev1.ResourceEphemeralStorage), "a limit removed from the template stayed")
}
