package pipeline

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// Ready means serving: a step stays Ready while a rollout keeps enough replicas up (a GPU rollout without surge
// keeps all but one), while its Deployment controller has not yet seen a new spec, and while an autoscaler adds
// replicas; an ongoing rollout shows as RollingOut. A step is not Ready when too few replicas serve (a Recreate
// rollout serves nothing), and a new version that never loads its model fails at the progress deadline even
// while old pods still serve.
func TestReadyMeansServing(t *testing.T) {
	noSurge := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	rolling := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	recreate := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	deadline := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
	type dep struct {
		strategy                     appsv1.DeploymentStrategy
		specReplicas                 int32
		generation, observed         int64
		replicas, updated, available int32
		conditions                   []appsv1.DeploymentCondition
	}
	for name, tc := range map[string]struct {
		stepReplicas int32
		autoscaler   string
		d            dep
		phase        inferencev1alpha1.Phase
		reason       string
	}{
		"rolled out": {3, "", dep{rolling, 3, 1, 1, 3, 3, 3, nil}, inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonReady},
		"GPU rollout without surge: two old replicas serve while the new one loads": {3, "",
			dep{noSurge, 3, 2, 2, 3, 1, 2, nil}, inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonRollingOut},
		"new spec not yet seen by the Deployment controller": {3, "",
			dep{noSurge, 3, 2, 1, 3, 3, 3, nil}, inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonRollingOut},
		"an autoscaler scales out from 2 to 4": {1, "hpa",
			dep{noSurge, 4, 1, 1, 4, 4, 2, nil}, inferencev1alpha1.PhaseReady, inferencev1alpha1.ReasonReady},
		"new pods never load, old pods still serve: failed at the progress deadline": {3, "",
			dep{rolling, 3, 2, 2, 4, 1, 3, deadline}, inferencev1alpha1.PhaseFailed, inferencev1alpha1.ReasonDeadline},
		"a Recreate rollout serves nothing": {1, "",
			dep{recreate, 1, 2, 2, 1, 1, 0, nil}, inferencev1alpha1.PhaseProgressing, inferencev1alpha1.ReasonStarting},
		"too few replicas serve (25% of 3 is none)": {3, "",
			dep{rolling, 3, 2, 2, 3, 1, 2, nil}, inferencev1alpha1.PhaseProgressing, inferencev1alpha1.ReasonStarting},
		"nothing available yet": {1, "",
			dep{rolling, 1, 1, 1, 1, 1, 0, nil}, inferencev1alpha1.PhaseProgressing, inferencev1alpha1.ReasonStarting},
	} {
		t.Run(name, func(t *testing.T) {
			p := sample()
			p.Spec.Steps[0].Location = ""
			p.Spec.Steps[0].Replicas = ptr.To(tc.stepReplicas)
			step := pipelinespec.StepName(p.Spec.Steps, 0)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: tc.d.generation},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tc.d.specReplicas), Strategy: tc.d.strategy},
				Status: appsv1.DeploymentStatus{ObservedGeneration: tc.d.observed, Replicas: tc.d.replicas,
					UpdatedReplicas: tc.d.updated, ReadyReplicas: tc.d.available, AvailableReplicas: tc.d.available,
					Conditions: tc.d.conditions}}
			o := observed{deployments: map[string]*appsv1.Deployment{step: d}, autoscalers: map[string][]string{}}
			if tc.autoscaler != "" {
				o.autoscalers[step] = []string{tc.autoscaler}
			}
			st := stepState(p, 0, o)
			if st.Phase != tc.phase || st.Reason != tc.reason {
				t.Errorf("step is %s (%s: %s), want %s (%s)", st.Phase, st.Reason, st.Message, tc.phase, tc.reason)
			}
		})
	}
}

// A cordon matters only for the pods the step wants: live pods of its current template. A pod of the old template
// still running there, or an evicted pod that keeps its node name, does not make a rollout stuck on the cordoned
// node look placed.
func TestPlacedCountsLivePodsOfTheCurrentTemplate(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(1000+s), 0)) }
	pod := func(name, hash, node string, created int, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created),
			Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	for name, tc := range map[string]struct {
		pods []corev1.Pod
		want int32
	}{
		"old pod runs, new one cannot be placed": {[]corev1.Pod{
			pod("old", "v1", "gpu-1", 0, corev1.PodRunning), pod("new", "v2", "", 5, corev1.PodPending)}, 0},
		"evicted pod keeps its node": {[]corev1.Pod{
			pod("evicted", "v1", "gpu-1", 0, corev1.PodFailed), pod("again", "v1", "", 5, corev1.PodPending)}, 0},
		"running pod of the current template": {[]corev1.Pod{
			pod("evicted", "v1", "gpu-1", 0, corev1.PodFailed), pod("running", "v1", "gpu-1", 5, corev1.PodRunning)}, 1},
		"pods without a template hash all count": {[]corev1.Pod{
			pod("a", "", "gpu-1", 0, corev1.PodRunning), pod("b", "", "gpu-1", 1, corev1.PodRunning)}, 2},
	} {
		t.Run(name, func(t *testing.T) {
			if got := placed(tc.pods); got != tc.want {
				t.Errorf("placed = %d, want %d", got, tc.want)
			}
		})
	}
}
