package sizer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	webhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

// sizerOwnsApp is what the sizer's manager holds of container app: its resources' memory limit.
const sizerOwnsApp = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:resources":{"f:limits":{"f:memory":{}}}}}}}}}`

// userOwnsApp is what a user's manager still holds of a container it kept: its name and ports, its image dropped.
const userOwnsApp = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:ports":{}}}}}}}`

// entry is a managedFields entry of manager owning fields (FieldsV1 JSON).
func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// A container is a stub to remove only when it lost its image in this write, had one before, and a sizer's fields
// are what kept it.
func TestContainerStubs(t *testing.T) {
	before := []corev1.Container{{Name: "app", Image: "web:1"}, {Name: "side", Image: "side:1"}}
	stub := corev1.Container{Name: "app"}
	server := corev1.Container{Name: "server", Image: "web:1"}
	for name, tc := range map[string]struct {
		containers []corev1.Container
		before     []corev1.Container
		managed    []metav1.ManagedFieldsEntry
		want       []int
	}{
		"a rename that left the sizer's stub": {[]corev1.Container{stub, server}, before,
			[]metav1.ManagedFieldsEntry{entry("gitops", `{}`), entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, []int{0}},
		"the shared field manager's stub too": {[]corev1.Container{server, stub}, before,
			[]metav1.ManagedFieldsEntry{entry(sizerv1alpha1.FieldManager, sizerOwnsApp)}, []int{1}},
		"another manager's stub is not ours to judge": {[]corev1.Container{stub, server}, before,
			[]metav1.ManagedFieldsEntry{entry("mesh-injector", sizerOwnsApp)}, nil},
		"a user who dropped only the image keeps the container (the write is refused)": {[]corev1.Container{stub, server}, before,
			[]metav1.ManagedFieldsEntry{entry("kubectl-edit", userOwnsApp), entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, nil},
		"a container that never had an image": {[]corev1.Container{{Name: "app"}}, nil,
			[]metav1.ManagedFieldsEntry{entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, nil},
		"a container with its image": {[]corev1.Container{{Name: "app", Image: "web:2"}}, before,
			[]metav1.ManagedFieldsEntry{entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, nil},
		"a sizer owning another container only": {[]corev1.Container{{Name: "side"}}, before,
			[]metav1.ManagedFieldsEntry{entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, nil},
		"unreadable fields": {[]corev1.Container{stub}, before,
			[]metav1.ManagedFieldsEntry{entry(sizerv1alpha1.FieldManager+"/web", `{"f:spec":`)}, nil},
		"another manager's unreadable fields": {[]corev1.Container{stub}, before,
			[]metav1.ManagedFieldsEntry{entry("gitops", `{"f:spec":`), entry(sizerv1alpha1.FieldManager+"/web", sizerOwnsApp)}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := webhook.ContainerStubs(tc.containers, tc.before, tc.managed)
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
