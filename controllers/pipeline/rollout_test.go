package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// A GPU step with several replicas rolls one pod at a time without a surge: on a node whose GPUs its pods hold, a
// surge pod would wait forever for a GPU. One replica is Recreate; a CPU step keeps the apiserver's defaults.
func TestGPUStepsRollWithoutSurge(t *testing.T) {
	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	noSurge := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	for name, tc := range map[string]struct {
		step inferencev1alpha1.Step
		want appsv1.DeploymentStrategy
	}{
		"GPU, 2 replicas": {inferencev1alpha1.Step{Replicas: ptr.To[int32](2), Resources: gpu}, noSurge},
		"GPU, 3 replicas, RollingUpdate stored by the defaults": {inferencev1alpha1.Step{Replicas: ptr.To[int32](3), Resources: gpu,
			Strategy: appsv1.RollingUpdateDeploymentStrategyType}, noSurge},
		"GPU, 1 replica": {inferencev1alpha1.Step{Resources: gpu}, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		"GPU, Recreate asked for": {inferencev1alpha1.Step{Replicas: ptr.To[int32](2), Resources: gpu, Strategy: appsv1.RecreateDeploymentStrategyType},
			appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		"CPU, 3 replicas": {inferencev1alpha1.Step{Replicas: ptr.To[int32](3)}, appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
	} {
		t.Run(name, func(t *testing.T) {
			p := sample()
			tc.step.Image = "x"
			p.Spec.Steps[0] = tc.step
			if diff := cmp.Diff(tc.want, DesiredDeployment(p, 0, pipelinespec.Wiring{}, ModelFetch{}).Spec.Strategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
		})
	}
}

// A rollout is complete only when every replica runs the current template and want of them are available: ready
// pods of an old template (a rollout whose new pods never load their model) do not complete it. (Whether the step is
// Ready meanwhile is TestReadyMeansServing's.)
func TestRolledOut(t *testing.T) {
	d := func(replicas, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: updated,
			ReadyReplicas: available, AvailableReplicas: available}}
	}
	for name, tc := range map[string]struct {
		d    *appsv1.Deployment
		want bool
	}{
		"all updated and available":           {d(2, 2, 2), true},
		"an old pod still serves":             {d(3, 2, 2), false},
		"new pod not ready, old one is":       {d(2, 1, 1), false},
		"updated but not available":           {d(2, 2, 1), false},
		"spec not yet seen by its controller": {d(2, 2, 2), false},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "spec not yet seen by its controller" {
				tc.d.Generation, tc.d.Status.ObservedGeneration = 2, 1
			}
			if got := rolledOut(tc.d, 2); got != tc.want {
				t.Errorf("rolledOut = %v, want %v", got, tc.want)
			}
		})
	}
}
