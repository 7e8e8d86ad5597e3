//go:build integration

package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// A step whose pods run and keep failing their readiness check says what the check answers (the kubelet's
// Unhealthy event), instead of only "Starting"; it is still Progressing, as a model that is loading answers so too.
func TestReadinessFailingSaysWhatTheCheckAnswers(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("loading", inferencev1alpha1.Step{Name: "a", Image: "x", Readiness: &inferencev1alpha1.Readiness{
		Protocol: inferencev1alpha1.ReadinessOpenInference}})
	s.g.Eventually(func() string { return s.stepStatus("loading", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonStarting))

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loading-a-x", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: "loading", inferencev1alpha1.StepLabel: "a"}},
		Spec: corev1.PodSpec{NodeName: s.ns + "-node", Containers: []corev1.Container{{Name: "server", Image: "x"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	s.podEvent(pod, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Minute))}}}}}
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())

	s.g.Eventually(func() string { return s.stepStatus("loading", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonReadinessFailing))
	st := s.stepStatus("loading", "a")
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseProgressing))
	s.g.Expect(st.Message).To(ContainSubstring("pod loading-a-x runs and is not ready: Readiness probe failed: HTTP probe failed with statuscode: 503"))
	s.g.Expect(s.get("loading").Status.Conditions).To(ContainElement(And(HaveField("Type", inferencev1alpha1.ConditionReady),
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", inferencev1alpha1.ReasonReadinessFailing))))
}

// Two autoscalers on one step's Deployment cancel each other out (Kubernetes scales with neither): the step, which
// still serves, says which ones, in its reason and a Warning event; with one of them gone, its replicas are left to the one that stays.
func TestTwoAutoscalersOnAStepAreReported(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("scaled", inferencev1alpha1.Step{Name: "a", Image: "x", Replicas: ptr.To[int32](2)})
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(2)))
	s.rollOut("scaled-a")
	s.g.Eventually(func() inferencev1alpha1.Phase { return s.stepStatus("scaled", "a").Phase }, timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))

	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	for _, name := range []string{"cpu", "queue"} {
		h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 5,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled-a"}}}
		s.g.Expect(env.Client.Create(s.ctx, h)).To(Succeed())
		hpas = append(hpas, h)
	}
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonAmbiguousAutoscalers))
	st := s.stepStatus("scaled", "a")
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseReady), "it still serves")
	s.g.Expect(st.Message).To(ContainSubstring("HorizontalPodAutoscalers cpu, queue all scale"))
	s.g.Eventually(func() []string { return s.events("scaled") }, timeout, poll).Should(ContainElement(
		HavePrefix("Warning " + inferencev1alpha1.ReasonAmbiguousAutoscalers + ": Step a:")))
	s.g.Expect(s.stepReplicas()).To(Equal(int32(2)), "replicas handed over with their value")

	s.g.Expect(env.Client.Delete(s.ctx, hpas[1])).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Reason }, timeout, poll).ShouldNot(Equal(inferencev1alpha1.ReasonAmbiguousAutoscalers))
	st = s.stepStatus("scaled", "a")
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseReady))
	s.g.Expect(st.Autoscaler).To(Equal("cpu"))
	s.g.Expect(st.Message).To(ContainSubstring("replicas are left to HorizontalPodAutoscaler cpu"))
}

// refusingHandOver is a client whose merge patches of a Deployment's managed fields the apiserver refuses, as a
// policy that forbids changing field ownership would.
type refusingHandOver struct{ client.Client }

func (c refusingHandOver) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*appsv1.Deployment); ok && patch.Type() == types.MergePatchType {
		if data, err := patch.Data(obj); err == nil && bytes.Contains(data, []byte(`"managedFields"`)) {
			return apierrors.NewForbidden(appsv1.Resource("deployments"), obj.GetName(), errors.New("changes of field ownership are not allowed"))
		}
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A hand-over of a step's replicas to its autoscaler that the apiserver refuses is the step's failure, with the
// apiserver's answer, not a silent retry; the Deployment keeps its replicas (no apply resets them) and the
// observedGeneration stays.
func TestRefusedHandOverIsReported(t *testing.T) {
	s := newScenario(t)
	env.StartCountedManager(t, pipeline.CacheOptions(), func(o client.Object) bool {
		_, ok := o.(*inferencev1alpha1.Pipeline)
		return ok
	}, func(mgr ctrl.Manager, c client.Client) error {
		return (&pipeline.Reconciler{Client: refusingHandOver{c}, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
	})
	s.oneStep("scaled", inferencev1alpha1.Step{Name: "a", Image: "x", Replicas: ptr.To[int32](3)})
	s.g.Eventually(s.stepReplicas, timeout, poll).Should(Equal(int32(3)))
	s.g.Eventually(func() int64 { return s.get("scaled").Status.ObservedGeneration }, timeout, poll).Should(Equal(int64(1)))

	s.g.Expect(env.Client.Create(s.ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "a-hpa", Namespace: s.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled-a"}}})).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("scaled", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonHandOverFailed))
	st := s.stepStatus("scaled", "a")
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	s.g.Expect(st.Message).To(ContainSubstring("changes of field ownership are not allowed"))
	s.g.Eventually(func() []string { return s.events("scaled") }, timeout, poll).Should(ContainElement(
		HavePrefix("Warning " + inferencev1alpha1.ReasonHandOverFailed + ": Step a:")))
	s.g.Expect(s.stepReplicas()).To(Equal(int32(3)), "no apply without replicas reset them")

	s.edit("scaled", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Image = "x:v2" })
	s.g.Consistently(func() int64 { return s.get("scaled").Status.ObservedGeneration }, 2*time.Second, poll).Should(
		Equal(int64(1)), "a generation whose Deployment was not written is not observed")
	s.g.Expect(s.deployment("scaled-a").Spec.Template.Spec.Containers[0].Image).To(Equal("x"))
}
