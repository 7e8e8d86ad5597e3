package daemonset_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	webhook "github.com/keelson-dev/keelson/webhooks/daemonset"
)

// hostNetwork with surge was refused after objects with it were stored: such an object stays writable (its
// finalizers removed, say) as long as it keeps the combination it had; a new surge on it is refused.
func TestHostNetworkSurgeRatchets(t *testing.T) {
	surging := func(surge intstr.IntOrString) *daemonsetv1alpha1.DaemonSet {
		ds := valid("agent")
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Template.Spec.HostNetwork = true
		ru := rollingUpdate(ds)
		ru.MaxSurge, ru.MaxUnavailable = &surge, ptr.To(intstr.FromInt32(0))
		return ds
	}
	old := surging(intstr.FromInt32(1))
	kept := old.DeepCopy()
	kept.Finalizers = nil
	kept.Spec.Template.Spec.Containers[0].Image = "x:v2"
	if _, err := (webhook.Validator{}).ValidateUpdate(context.Background(), old, kept); err != nil {
		t.Errorf("an update keeping the stored hostNetwork surge was refused: %v", err)
	}
	if _, err := (webhook.Validator{}).ValidateUpdate(context.Background(), old, surging(intstr.FromString("50%"))); err == nil {
		t.Error("an update changing the hostNetwork surge was admitted")
	}
	plain := valid("agent")
	if _, err := (webhook.Validator{}).ValidateUpdate(context.Background(), plain, surging(intstr.FromInt32(1))); err == nil {
		t.Error("an update adding a hostNetwork surge was admitted")
	}
	if _, err := (webhook.Validator{}).ValidateCreate(context.Background(), surging(intstr.FromInt32(1))); err == nil {
		t.Error("a new hostNetwork surge was admitted")
	}
}
