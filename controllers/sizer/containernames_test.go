//go:build integration

package sizer_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// A resources entry naming no container of the workload (a typo, a container renamed) sizes nothing: the sizer
// says so in Sized, naming the entry and the containers there are, instead of reporting everything applied.
func TestAnUnknownContainerNameIsNotSized(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("typo", "user", ptr.To[int32](1), corev1.Container{Name: "app", Image: "x"})
	s.sizer("typo", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("typo"), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "apps", Requests: rl("cpu", "100m"),
			ControlledValues: sizerv1alpha1.RequestsAndLimits}}})
	s.g.Eventually(s.condition("typo", sizerv1alpha1.ConditionSized), timeout, poll).
		Should(Equal("False/" + sizerv1alpha1.ReasonContainerNotFound))
	c := s.get("typo").Status.Conditions
	var msg string
	for _, cond := range c {
		if cond.Type == sizerv1alpha1.ConditionSized {
			msg = cond.Message
		}
	}
	s.g.Expect(msg).To(ContainSubstring(`spec.resources[0].containerName: "apps"`))
	s.g.Expect(msg).To(ContainSubstring("app"))
}
