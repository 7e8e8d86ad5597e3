package pipeline

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAutoscalerOf(t *testing.T) {
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
	for target, want := range map[string]string{"p-a": "b", "p-b": "", "p-c": "", "p-d": ""} {
		if got := autoscalerOf(hpas, target); got != want {
			t.Errorf("autoscalerOf(%s) = %q, want %q", target, got, want)
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
