//go:build integration

package pipeline_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// A step's Deployment keeps the fetcher it was written with across an upgrade (so the upgrade restarts no step);
// a pod created from it afterwards, through the apiserver, runs today's fetcher. Its server and other containers
// are created as sent, and a pod with no fetcher is left alone.
func TestNewStepPodsRunTodaysFetcher(t *testing.T) {
	serveWebhooks(t)
	ctx := context.Background()
	c, ns := withWebhook.Client, namespace(t, withWebhook)
	old := "registry.example/pipeline-controller:yesterday"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "step", Namespace: ns, Labels: map[string]string{inferencev1alpha1.PipelineLabel: "p"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: pipelinespec.FetchContainer, Image: old, Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://old:3128"}}},
				{Name: pipelinespec.HoldContainer, Image: old, RestartPolicy: new(corev1.ContainerRestartPolicyAlways)},
			},
			Containers: []corev1.Container{{Name: "server", Image: "registry.example/server:1"}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("creating a step pod: %v", err)
	}
	var got corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	fetch, hold := got.Spec.InitContainers[0], got.Spec.InitContainers[1]
	if fetch.Image != todaysFetcher.Image || hold.Image != todaysFetcher.Image {
		t.Errorf("the new pod runs fetch %s and hold %s, want %s", fetch.Image, hold.Image, todaysFetcher.Image)
	}
	if len(fetch.Env) != 1 || fetch.Env[0] != todaysFetcher.Env[0] {
		t.Errorf("the fetch's env is %v, want today's %v", fetch.Env, todaysFetcher.Env)
	}
	if server := got.Spec.Containers[0].Image; server != "registry.example/server:1" {
		t.Errorf("the server's image became %s", server)
	}

	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns, Labels: map[string]string{inferencev1alpha1.PipelineLabel: "p"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: old}},
			Containers:     []corev1.Container{{Name: "server", Image: "registry.example/server:1"}},
		},
	}
	if err := c.Create(ctx, plain); err != nil {
		t.Fatalf("creating a pod with no fetcher: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(plain), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.InitContainers[0].Image != old {
		t.Errorf("a pod with no fetcher had its init container changed to %s", got.Spec.InitContainers[0].Image)
	}
}
