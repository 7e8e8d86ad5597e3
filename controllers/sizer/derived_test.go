//go:build integration

package sizer_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// The runtime variables the sizer derives from a limit (GOMEMLIMIT from the memory limit, GOMAXPROCS from the cpu
// limit) follow that limit while the sizer derives them, and leave with the derivation: a language taken off the
// sizer, the sizer deleted. Handed over like the limits, they would stay as numbers no one keeps true, and a Go
// heap limit above a lowered memory limit no longer keeps the process under it. The limits themselves stay.
func TestDerivedVariablesLeaveWithTheirSource(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("api", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x",
		Env: []corev1.EnvVar{{Name: "LOG", Value: "debug"}}})
	limits := func(mem string) []sizerv1alpha1.ContainerResources {
		return []sizerv1alpha1.ContainerResources{{ContainerName: "app", Limits: rl("cpu", "1", "memory", mem),
			ControlledValues: sizerv1alpha1.RequestsAndLimits}}
	}
	goRuntime := &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](10)}
	s.sizer("api", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("api"), ForceOwnership: true, Resources: limits("1Gi"),
		Runtime: goRuntime})
	envOf := s.envOf("api")
	memoryLimit := func() string {
		return s.getDeployment("api").Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String()
	}
	s.g.Eventually(envOf, timeout, poll).Should(Equal(map[string]string{"LOG": "debug", "GOMAXPROCS": "2", "GOMEMLIMIT": "921MiB"}))

	s.update("api", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Resources = limits("256Mi") })
	s.g.Eventually(envOf, timeout, poll).Should(Equal(map[string]string{"LOG": "debug", "GOMAXPROCS": "2", "GOMEMLIMIT": "230MiB"}),
		"GOMEMLIMIT follows the limit")

	s.update("api", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Runtime = nil })
	s.g.Eventually(envOf, timeout, poll).Should(Equal(map[string]string{"LOG": "debug"}),
		"a variable the sizer no longer derives was left behind")
	s.g.Expect(memoryLimit()).To(Equal("256Mi"), "the limit is handed over with its value")

	s.update("api", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Runtime = goRuntime })
	s.g.Eventually(envOf, timeout, poll).Should(HaveKeyWithValue("GOMEMLIMIT", "230MiB"))
	s.g.Expect(env.Client.Delete(s.ctx, s.get("api"))).To(Succeed())
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "api"}, &sizerv1alpha1.WorkloadSizer{})
	}, timeout, poll).ShouldNot(Succeed())
	s.g.Expect(envOf()).To(Equal(map[string]string{"LOG": "debug"}), "the deleted sizer's variables were left behind")
	s.g.Expect(memoryLimit()).To(Equal("256Mi"), "the limit is kept as the sizer left it")
}
