//go:build integration

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
	template := appTemplate("made", corev1.Container{Name: "app", Image: "nginx:1.27",
		Env: []corev1.EnvVar{{Name: "KEPT", Value: "1"}, {Name: "DROPPED", Value: "2"}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
	})
	s.sizer("made", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("made"), Template: template, Size: ptr.To[int32](1)})
	s.awaitCreated("made")
	s.g.Eventually(s.envOf("made"), timeout, poll).Should(And(HaveKeyWithValue("KEPT", "1"), HaveKeyWithValue("DROPPED", "2")))
	resources := func() corev1.ResourceRequirements {
		return s.getDeployment("made").Spec.Template.Spec.Containers[0].Resources
	}
	limits := func() corev1.ResourceList { return resources().Limits }
	s.g.Expect(limits()).To(HaveKey(corev1.ResourceEphemeralStorage))

	// A resources entry sizes what it names and keeps the template's other requests and limits, as on a user's
	// workload.
	s.update("made", func(w *sizerv1alpha1.WorkloadSizer) {
		w.Spec.Resources = []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "100m"), Limits: rl("cpu", "500m")}}
	})
	s.g.Eventually(func() []string {
		r := resources()
		return []string{r.Requests.Cpu().String(), r.Requests.Memory().String(), r.Limits.Cpu().String(), r.Limits.StorageEphemeral().String()}
	}, timeout, poll).Should(Equal([]string{"100m", "64Mi", "500m", "1Gi"}), "requests cpu and memory, limits cpu and ephemeral-storage")

	s.update("made", func(w *sizerv1alpha1.WorkloadSizer) {
		c := &w.Spec.Template.Spec.Containers[0]
		c.Env = c.Env[:1]
		c.Resources.Limits = nil // the template's ephemeral-storage limit
	})
	s.g.Eventually(s.envOf("made"), timeout, poll).ShouldNot(HaveKey("DROPPED"), "a variable removed from the template stayed")
	s.g.Expect(s.envOf("made")()).To(HaveKeyWithValue("KEPT", "1"))
	s.g.Eventually(limits, timeout, poll).ShouldNot(HaveKey(corev1.ResourceEphemeralStorage), "a limit removed from the template stayed")
	final := resources()
	s.g.Expect(final.Requests.Memory().String()).To(Equal("64Mi"))
	s.g.Expect(final.Limits.Cpu().String()).To(Equal("500m"))
}

// A created target's requests and runtime values are decided from the template the apply will hold, not from the
// previous apply: when the template lowers its memory limit, a request the sizer writes comes down under it and
// GOMEMLIMIT follows it in the same write (one rollout, with no pod whose GOMEMLIMIT is above its limit).
func TestACreatedTargetIsSizedFromItsNewTemplate(t *testing.T) {
	s := newScenario(t)
	startController(t)
	template := appTemplate("lowered", corev1.Container{Name: "app", Image: "nginx:1.27",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}})
	s.sizer("lowered", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("lowered"), Template: template, Size: ptr.To[int32](1),
		Runtime:   &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](10)},
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("memory", "1Gi"), ControlledValues: sizerv1alpha1.RequestsOnly}}})
	s.awaitCreated("lowered")
	s.g.Eventually(s.envOf("lowered"), timeout, poll).Should(HaveKeyWithValue("GOMEMLIMIT", "1843MiB"))
	s.g.Eventually(s.condition("lowered", sizerv1alpha1.ConditionSized), timeout, poll).Should(HavePrefix("True/"))
	generation := s.getDeployment("lowered").Generation

	s.update("lowered", func(w *sizerv1alpha1.WorkloadSizer) {
		w.Spec.Template.Spec.Containers[0].Resources.Limits = rl("memory", "512Mi")
	})
	s.g.Eventually(func() string {
		return s.getDeployment("lowered").Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String()
	}, timeout, poll).Should(Equal("512Mi"), "the request the sizer writes stays under the template's new limit")
	s.g.Expect(s.envOf("lowered")()).To(HaveKeyWithValue("GOMEMLIMIT", "460MiB"))
	s.g.Eventually(s.condition("lowered", sizerv1alpha1.ConditionSized), timeout, poll).Should(HavePrefix("True/"))
	s.g.Expect(s.getDeployment("lowered").Generation).To(Equal(generation+1), "one template write for one change")
}

// appTemplate is a pod template labelled app: name with one container.
func appTemplate(name string, c corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// awaitCreated waits for the sizer to create its Deployment name.
func (s *scenario) awaitCreated(name string) {
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &appsv1.Deployment{})
	}, timeout, poll).Should(Succeed())
}
