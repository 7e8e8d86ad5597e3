//go:build integration

package sizer_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/testenv"
	webhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

// entry is a managedFields entry of manager owning fields (FieldsV1 JSON).
func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

const sizerOwnsApp = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:resources":{"f:limits":{"f:memory":{}}}}}}}}}`

// userOwnsApp is what a user's manager still holds of a container it kept: its name and ports, its image dropped.
const userOwnsApp = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:ports":{}}}}}}}`

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

// applyWeb applies, as manager, a Deployment "web" whose containers are the given (name, image) pairs, an empty image
// meaning the container's memory limit only (what the sizer applies).
func applyWeb(ctx context.Context, c client.Client, ns, manager string, containers ...[2]string) error {
	pod := corev1ac.PodSpec()
	for _, nc := range containers {
		ca := corev1ac.Container().WithName(nc[0])
		if nc[1] != "" {
			ca.WithImage(nc[1])
		} else {
			ca.WithResources(corev1ac.ResourceRequirements().WithLimits(corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("96Mi")}))
		}
		pod.WithContainers(ca)
	}
	ac := appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "web"}).WithSpec(pod)))
	return c.Apply(ctx, ac, client.FieldOwner(manager))
}

// A user renames, with a server-side apply, a container a sizer sizes: with the webhook the apply goes through and
// the old container is gone; without it the apiserver refuses the apply (kubernetes#108081), as it did before.
func TestRenameUnderServerSideApply(t *testing.T) {
	serveWebhooks(t)
	ctx := context.Background()
	for _, side := range []struct {
		env     *testenv.Env
		refused bool
	}{{withWebhook, false}, {withoutWebhook, true}} {
		c, ns := side.env.Client, namespace(t, side.env)
		if err := applyWeb(ctx, c, ns, "gitops", [2]string{"app", "web:1"}); err != nil {
			t.Fatal(err)
		}
		if err := applyWeb(ctx, c, ns, sizerv1alpha1.FieldManager+"/web", [2]string{"app", ""}); err != nil {
			t.Fatal(err)
		}
		err := applyWeb(ctx, c, ns, "gitops", [2]string{"server", "web:1"})
		if side.refused {
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "image: Required value") {
				t.Fatalf("without the webhook: got %v, want the apiserver's refusal of the stub", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("with the webhook, the rename was refused: %v", err)
		}
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ctr := range d.Spec.Template.Spec.Containers {
			names = append(names, ctr.Name+"="+ctr.Image)
		}
		if strings.Join(names, ",") != "server=web:1" {
			t.Fatalf("containers after the rename: %v, want only server=web:1", names)
		}
		// A user who keeps the container but leaves its image out still owns it: refused, never removed, even with
		// another container beside it.
		if err := applyWeb(ctx, c, ns, "gitops", [2]string{"server", "web:1"}, [2]string{"side", "side:1"}); err != nil {
			t.Fatal(err)
		}
		if err := applyWeb(ctx, c, ns, sizerv1alpha1.FieldManager+"/web", [2]string{"server", ""}); err != nil {
			t.Fatal(err)
		}
		var live appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &live); err != nil {
			t.Fatal(err)
		}
		for i := range live.Spec.Template.Spec.Containers {
			if live.Spec.Template.Spec.Containers[i].Name == "server" {
				live.Spec.Template.Spec.Containers[i].Image = ""
			}
		}
		err = c.Update(ctx, &live, client.FieldOwner("kubectl-edit"))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "image: Required value") {
			t.Fatalf("an update that drops only an image: got %v, want the apiserver's refusal, the container kept", err)
		}
		// A removal that leaves no container at all is the user's own mistake: still refused.
		if err := applyWeb(ctx, c, ns, sizerv1alpha1.FieldManager+"/web", [2]string{"server", ""}); err != nil {
			t.Fatal(err)
		}
		err = applyWeb(ctx, c, ns, "gitops")
		if err == nil {
			t.Fatal("an apply that removes every container was admitted")
		}
	}
}
