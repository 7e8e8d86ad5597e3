//go:build integration

package sizer_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/sizer"
)

// events lists the type, reason and note of every event regarding the sizer name.
func (s *scenario) events(name string) []string {
	return env.Events(s.ctx, s.ns, "WorkloadSizer", name)
}

// A conflict that comes back with another cause (another field manager) is a new event naming it: `kubectl events`
// never shows only the first cause under a count that grew.
func TestEachNewConflictIsAnEvent(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("shop", "gitops-controller", ptr.To[int32](2), corev1.Container{Name: "app", Image: "shop:v1"})
	s.sizer("shop", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("shop"), Size: ptr.To[int32](4)})
	s.g.Eventually(func() []string { return s.events("shop") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Warning "+sizer.EventConflict), ContainSubstring("gitops-controller"))))

	// Forced, the sizer takes replicas over; let go again, someone edits them by hand.
	s.update("shop", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.ForceOwnership = true })
	s.g.Eventually(s.condition("shop", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
	s.update("shop", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.ForceOwnership = false })
	s.g.Eventually(func() error {
		d := s.getDeployment("shop")
		d.Spec.Replicas = ptr.To[int32](5)
		return env.Client.Update(s.ctx, d, client.FieldOwner("kubectl-edit"))
	}, timeout, poll).Should(Succeed())

	s.g.Eventually(func() []string { return s.events("shop") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Warning "+sizer.EventConflict), ContainSubstring("kubectl-edit"))))
}
