package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

func TestAutoscalersOf(t *testing.T) {
	hpa := func(name, apiVersion, kind, target string) autoscalingv2.HorizontalPodAutoscaler {
		return autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: apiVersion, Kind: kind, Name: target}}}
	}
	hpas := []autoscalingv2.HorizontalPodAutoscaler{
		hpa("other", "apps/v1", "Deployment", "p-other"),
		hpa("z", "apps/v1", "Deployment", "p-a"),
		hpa("b", "apps/v1", "Deployment", "p-a"),
		hpa("sts", "apps/v1", "StatefulSet", "p-b"),
		hpa("foreign", "example.com/v1", "Deployment", "p-c"),
	}
	for target, want := range map[string][]string{"p-a": {"b", "z"}, "p-b": nil, "p-c": nil, "p-d": nil} {
		if got := autoscalersOf(hpas, target); !cmp.Equal(got, want) {
			t.Errorf("autoscalersOf(%s) = %q, want %q", target, got, want)
		}
	}
}

// Handing replicas over takes only spec.replicas out of the controller's Apply entry; other managers' entries and
// the controller's other fields stay.
func TestWithoutReplicas(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	in := []metav1.ManagedFieldsEntry{
		entry(FieldOwner, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:replicas":{},"f:template":{}}}`),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:replicas":{}}}`),
	}
	out, held := withoutReplicas(in)
	if !held {
		t.Fatal("the controller's entry held spec.replicas")
	}
	if got := out[0].FieldsV1.GetRawString(); got != `{"f:spec":{"f:template":{}}}` {
		t.Errorf("controller's entry = %s", got)
	}
	if got := out[1].FieldsV1.GetRawString(); got != `{"f:spec":{"f:replicas":{}}}` {
		t.Errorf("another manager's entry changed: %s", got)
	}
	if _, again := withoutReplicas(out); again {
		t.Error("handed over twice")
	}
}

// An autoscaled GPU step rolls one pod at a time without a surge, even on the Recreate its single stored replica
// defaulted to: the autoscaler may have scaled it to many pods, which Recreate would all stop at once. A step without
// an autoscaler, and a strategy of the step's own, stay as they were.
func TestAutoscaledGPUStepRollsWithoutSurge(t *testing.T) {
	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	recreate := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	for name, tc := range map[string]struct {
		step       inferencev1alpha1.Step
		autoscaler string
		want       appsv1.DeploymentStrategy
	}{
		"GPU, 1 replica, autoscaled":                      {inferencev1alpha1.Step{Resources: gpu}, "hpa", noSurgeStrategy()},
		"GPU, 1 replica, Recreate stored, autoscaled":     {inferencev1alpha1.Step{Replicas: ptr.To[int32](1), Resources: gpu, Strategy: appsv1.RecreateDeploymentStrategyType}, "hpa", noSurgeStrategy()},
		"GPU, 1 replica, not autoscaled":                  {inferencev1alpha1.Step{Resources: gpu}, "", recreate},
		"CPU, autoscaled":                                 {inferencev1alpha1.Step{}, "hpa", appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}},
		"GPU, 2 replicas, Recreate asked for, autoscaled": {inferencev1alpha1.Step{Replicas: ptr.To[int32](2), Resources: gpu, Strategy: appsv1.RecreateDeploymentStrategyType}, "hpa", recreate},
	} {
		t.Run(name, func(t *testing.T) {
			p := sample()
			tc.step.Image = "x"
			p.Spec.Steps[0] = tc.step
			d := DesiredDeployment(p, 0, pipelinespec.Wiring{}, ModelFetch{})
			leaveReplicasTo(tc.autoscaler, tc.step, d)
			if diff := cmp.Diff(tc.want, d.Spec.Strategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
		})
	}
}

// When its autoscaler goes, a step on the default replicas keeps the autoscaler's count for the pipeline's current
// generation, and only for it; a step with replicas of its own gets them back.
func TestReplicasAfterAutoscaler(t *testing.T) {
	live := func(replicas int32, kept string) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
		if kept != "" {
			d.Annotations = map[string]string{KeptReplicasAnnotation: kept}
		}
		return d
	}
	for name, tc := range map[string]struct {
		replicas *int32
		live     *appsv1.Deployment
		gone     bool
		want     *int32
	}{
		"default replicas, autoscaler just went":    {nil, live(4, ""), true, ptr.To[int32](4)},
		"stored default of 1, autoscaler just went": {ptr.To[int32](1), live(4, ""), true, ptr.To[int32](4)},
		"own replicas, autoscaler just went":        {ptr.To[int32](2), live(4, ""), true, nil},
		"kept for this generation":                  {nil, live(4, "4@7"), false, ptr.To[int32](4)},
		"kept for an older generation":              {nil, live(4, "4@6"), false, nil},
		"autoscaler left one replica":               {nil, live(1, ""), true, nil},
		"no autoscaler ever":                        {nil, live(3, ""), false, nil},
		"no Deployment":                             {nil, nil, true, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := replicasAfterAutoscaler(inferencev1alpha1.Step{Replicas: tc.replicas}, 7, tc.live, tc.gone)
			if diff := cmp.Diff(tc.want, got.kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}
