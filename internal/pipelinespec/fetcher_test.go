package pipelinespec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// A pod made from a template written by an older controller runs today's fetcher; the server, other init
// containers and a user's sidecar named otherwise keep theirs.
func TestRefreshGivesThePodTodaysFetcher(t *testing.T) {
	old := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://old-proxy:3128"}}
	pod := corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", Image: "registry.example/setup:1"},
			{Name: FetchContainer, Image: "registry.example/pipeline-controller:0.1.0", Args: []string{"fetch-model"}, Env: old},
			{Name: HoldContainer, Image: "registry.example/pipeline-controller:0.1.0"},
		},
		Containers: []corev1.Container{{Name: "server", Image: "registry.example/server:1"}},
	}
	want := pod.DeepCopy()
	now := Fetcher{Image: "registry.example/pipeline-controller:0.2.0",
		Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://new-proxy:3128"}}}

	if !now.Refresh(&pod) {
		t.Fatal("Refresh reported no change for a pod of an older fetcher")
	}
	want.InitContainers[1].Image, want.InitContainers[1].Env = now.Image, now.Env
	want.InitContainers[2].Image = now.Image
	if !equality.Semantic.DeepEqual(pod, *want) {
		t.Fatalf("refreshed pod:\n got %+v\nwant %+v", pod, *want)
	}
	if now.Refresh(&pod) {
		t.Fatal("a pod already running today's fetcher was changed again")
	}
	// The pod's env is its own copy, not the fetcher's.
	now.Env[0].Value = "changed"
	if pod.InitContainers[1].Env[0].Value != "http://new-proxy:3128" {
		t.Fatal("the pod's env shares its backing array with the fetcher's")
	}
}

// A controller with no fetch image configured (its configuration refused) leaves pods as their templates made them.
func TestRefreshWithoutAnImageChangesNothing(t *testing.T) {
	pod := corev1.PodSpec{InitContainers: []corev1.Container{{Name: FetchContainer, Image: "registry.example/pipeline-controller:0.1.0"}}}
	if (Fetcher{}).Refresh(&pod) || pod.InitContainers[0].Image != "registry.example/pipeline-controller:0.1.0" {
		t.Fatalf("an empty fetcher changed the pod: %+v", pod.InitContainers)
	}
}
