//go:build integration

package pipeline_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// edit changes a pipeline's spec, retrying on conflicts.
func (s *scenario) edit(name string, change func(*inferencev1alpha1.Pipeline)) {
	s.g.Eventually(func() error {
		p := s.get(name)
		change(p)
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
}

// probe is the readiness probe of a Deployment's container.
func (s *scenario) probe(name string) func() *corev1.Probe {
	return func() *corev1.Probe {
		d := s.deployment(name)
		if d == nil {
			return nil
		}
		return d.Spec.Template.Spec.Containers[0].ReadinessProbe
	}
}

// A step's readiness is its container's readiness probe; removing it goes back to the TCP check, with nothing of
// the HTTP check left behind (the apply removes the fields it no longer sets).
func TestReadinessBecomesTheProbe(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("ready", inferencev1alpha1.Step{Name: "a", Image: "x", Port: 9000,
		Readiness: &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/models/arcface/ready"}}})
	s.g.Eventually(s.probe("ready-a"), timeout, poll).Should(And(
		HaveField("HTTPGet.Path", "/models/arcface/ready"), HaveField("HTTPGet.Port", intstr.FromInt32(9000)),
		HaveField("TCPSocket", BeNil())))

	s.edit("ready", func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Readiness = &inferencev1alpha1.Readiness{Protocol: inferencev1alpha1.ReadinessOpenInference}
	})
	s.g.Eventually(s.probe("ready-a"), timeout, poll).Should(HaveField("HTTPGet.Path", pipeline.OpenInferenceReadyPath))

	s.edit("ready", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Readiness = nil })
	s.g.Eventually(s.probe("ready-a"), timeout, poll).Should(And(
		HaveField("TCPSocket.Port", intstr.FromInt32(9000)), HaveField("HTTPGet", BeNil())))
}

// scale sets a Deployment's replicas through the scale subresource, as an autoscaler does.
func (s *scenario) scale(name string, replicas int32, manager string) {
	d := s.deployment(name)
	s.g.Expect(d).NotTo(BeNil())
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	s.g.Expect(env.Client.SubResource("scale").Update(s.ctx, d, client.WithSubResourceBody(sc), client.FieldOwner(manager))).To(Succeed())
}

// stepReplicas are the replicas of the "scaled" pipeline's step Deployment.
func (s *scenario) stepReplicas() int32 {
	if d := s.deployment("scaled-a"); d != nil {
		return ptr.Deref(d.Spec.Replicas, -1)
	}
	return -1
}

// An autoscaler on a step's Deployment owns its replicas: the controller hands them over with their value (the
// apply that leaves them out does not reset them to 1), leaves the autoscaler's count alone, and says so in the
// step's status. Without the autoscaler the step's replicas come back.
func TestAutoscalerKeepsTheReplicas(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.oneStep("scaled", inferencev1alpha1.Step{Name: "a", Image: "x", Replicas: ptr.To[int32](2)})
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(2)))

	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "a-hpa", Namespace: s.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled-a"}}}
	s.g.Expect(env.Client.Create(s.ctx, hpa)).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Autoscaler }, timeout, poll).Should(Equal("a-hpa"))
	s.g.Expect(s.stepStatus("scaled", "a").Message).To(ContainSubstring("HorizontalPodAutoscaler a-hpa"))
	quiet(s, c)
	s.g.Expect(s.stepReplicas()).To(Equal(int32(2)), "handed over with its value, not reset")
	for _, e := range s.deployment("scaled-a").ManagedFields {
		if e.Manager == pipeline.FieldOwner && e.Operation == metav1.ManagedFieldsOperationApply {
			s.g.Expect(e.FieldsV1.GetRawString()).NotTo(ContainSubstring(`"f:replicas"`), "the controller no longer owns spec.replicas")
		}
	}

	s.scale("scaled-a", 4, "horizontal-pod-autoscaler")
	s.edit("scaled", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Image = "x:v2" }) // a pass that applies
	s.g.Eventually(func() string { return s.deployment("scaled-a").Spec.Template.Spec.Containers[0].Image }, timeout, poll).Should(Equal("x:v2"))
	quiet(s, c)
	s.g.Expect(s.stepReplicas()).To(Equal(int32(4)), "the autoscaler's count stays")

	s.g.Expect(env.Client.Delete(s.ctx, hpa)).To(Succeed())
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(2)), "without an autoscaler, the step's replicas")
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Autoscaler }, timeout, poll).Should(BeEmpty())
}

// A cordon keeps new pods off a node, not the running ones: a step whose pods run and are ready on a node cordoned
// afterwards stays Ready. The cordon is the step's problem only while a pod of it is not placed.
func TestCordonedNodeKeepsAServingStepReady(t *testing.T) {
	s := newScenario(t)
	startController(t)
	node := s.ns + "-gpu"
	s.node(node, 0, true)
	s.oneStep("serving", inferencev1alpha1.Step{Name: "a", Image: "x", Location: node})
	s.g.Eventually(func() string { return s.stepStatus("serving", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNodeCordoned),
		"no pod placed yet: the cordon keeps it off")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "serving-a-x", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: "serving", inferencev1alpha1.StepLabel: "a"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "server", Image: "x"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())
	s.rollOut("serving-a")
	s.g.Eventually(func() inferencev1alpha1.Phase { return s.stepStatus("serving", "a").Phase }, timeout, poll).Should(
		Equal(inferencev1alpha1.PhaseReady))
}

// Ports someone else added to a step's Service stay, through the controller's later applies and through its repair
// of its own port's number.
func TestOthersServicePortsStay(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("ports", inferencev1alpha1.Step{Name: "a", Image: "x", Port: 9000})
	svc := func() *corev1.Service {
		var got corev1.Service
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "ports-a"}, &got); err != nil {
			return nil
		}
		return &got
	}
	portsOf := func() map[string]int32 {
		out := map[string]int32{}
		if got := svc(); got != nil {
			for _, p := range got.Spec.Ports {
				out[p.Name] = p.Port
			}
		}
		return out
	}
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9000}))

	// A metrics port, applied by another field manager.
	metrics := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "ports-a", Namespace: s.ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 9100, TargetPort: intstr.FromInt32(9100)}}}}
	s.g.Expect(env.Client.Patch(s.ctx, metrics, client.Apply, client.FieldOwner("metrics-operator"))).To(Succeed()) //nolint:staticcheck // the other manager applies a typed object
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9000, "metrics": 9100}))

	// The step's port moves: the controller applies.
	s.edit("ports", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Port = 9001 })
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9001, "metrics": 9100}))

	// Someone renumbers the step's port: the controller repairs it, and only it.
	s.g.Eventually(func() error {
		got := svc()
		for i := range got.Spec.Ports {
			if got.Spec.Ports[i].Name == "http" {
				got.Spec.Ports[i].Port = 1234
			}
		}
		return env.Client.Update(context.Background(), got, client.FieldOwner("kubectl-edit"))
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(portsOf, timeout, poll).Should(Equal(map[string]int32{"http": 9001, "metrics": 9100}))
	// A pass that read the Service before the edit may have its apply refused once; the next one repairs it.
	s.g.Eventually(func() string { return s.stepStatus("ports", "a").Reason }, timeout, poll).ShouldNot(Equal(inferencev1alpha1.ReasonApplyFailed))
}
