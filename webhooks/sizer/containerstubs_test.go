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
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/testenv"
)

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
