//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// A step on the default replicas keeps the count its autoscaler left when the autoscaler goes (a GPU step does not
// drop from four pods to one at once), says so in an event, and goes back to its spec's replicas once the spec
// changes.
func TestHandBackKeepsTheAutoscalersReplicas(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.oneStep("scaled", inferencev1alpha1.Step{Name: "a", Image: "x"})
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(1)))

	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "a-hpa", Namespace: s.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled-a"}}}
	s.g.Expect(env.Client.Create(s.ctx, hpa)).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Autoscaler }, timeout, poll).Should(Equal("a-hpa"))
	quiet(s, c)
	s.scale("scaled-a", 4, "horizontal-pod-autoscaler")
	quiet(s, c)

	s.g.Expect(env.Client.Delete(s.ctx, hpa)).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Autoscaler }, timeout, poll).Should(BeEmpty())
	s.g.Eventually(func() []string { return s.events("scaled") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Normal "+pipeline.ReasonAutoscalerRemoved), ContainSubstring("keeping its 4 replicas"))))
	s.g.Consistently(s.stepReplicas, time.Second, poll).Should(Equal(int32(4)), "the autoscaler's count stays")

	// Drift is still undone: the kept count is what the step holds.
	s.scale("scaled-a", 2, "kubectl")
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(4)))

	// A spec change is the user deciding: the spec's replicas rule again.
	s.edit("scaled", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Image = "x:v2" })
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(1)))
}
