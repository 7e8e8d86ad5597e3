package daemonset

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// testTemplate is a template of one or two containers "app" and "sidecar" with the given images.
func testTemplate(images ...string) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"},
		Annotations: map[string]string{"team": "infra"}}}
	for i, image := range images {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: []string{"app", "sidecar"}[i], Image: image})
	}
	return t
}

// Only container images and the template's labels and annotations change in place; any other difference needs a
// new pod.
func TestInPlaceImages(t *testing.T) {
	for name, tc := range map[string]struct {
		to     func(*corev1.PodTemplateSpec)
		images map[string]string
		ok     bool
	}{
		"same template": {to: func(*corev1.PodTemplateSpec) {}, images: map[string]string{}, ok: true},
		"one image":     {to: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[1].Image = "proxy:v2" }, images: map[string]string{"sidecar": "proxy:v2"}, ok: true},
		"both images": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "a:2"
			t.Spec.Containers[1].Image = "b:2"
		}, images: map[string]string{"app": "a:2", "sidecar": "b:2"}, ok: true},
		"labels and an image": {to: func(t *corev1.PodTemplateSpec) { t.Labels["tier"] = "x"; t.Spec.Containers[0].Image = "a:2" }, images: map[string]string{"app": "a:2"}, ok: true},
		"annotations only":    {to: func(t *corev1.PodTemplateSpec) { t.Annotations = nil }, images: map[string]string{}, ok: true},
		"an environment variable": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}},
		"resources": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}},
		"a container added": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "x", Image: "x"})
		}},
		"containers reordered": {to: func(t *corev1.PodTemplateSpec) { c := t.Spec.Containers; c[0], c[1] = c[1], c[0] }},
		"a container renamed":  {to: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[1].Name = "proxy" }},
		"an init container": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "i"}}
		}},
		"a node selector": {to: func(t *corev1.PodTemplateSpec) { t.Spec.NodeSelector = map[string]string{"a": "b"} }},
		"an image and a command": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "a:2"
			t.Spec.Containers[0].Command = []string{"x"}
		}},
	} {
		from := testTemplate("a:1", "b:1")
		to := from.DeepCopy()
		tc.to(to)
		images, ok := inPlaceImages(from, to)
		if ok != tc.ok || (ok && !cmp.Equal(images, tc.images)) {
			t.Errorf("%s: got %v %v, want %v %v", name, images, ok, tc.images, tc.ok)
		}
	}
}

// The patch changes the images, moves the template's labels and annotations (removing only keys the old template
// set), relabels the revision, records the running containers, and fails on a pod changed since it was read.
func TestInPlacePatch(t *testing.T) {
	from := testTemplate("a:1", "b:1")
	from.Labels["old"] = "x"
	to := testTemplate("a:1", "b:2")
	to.Annotations["team"] = "platform"
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds1"}}
	pod := newPod(ds, from, oldRev, "n1")
	pod.Name, pod.ResourceVersion, pod.UID = "agent-x", "42", "u1"
	pod.Annotations["added-by-someone"] = "keep"
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "cri://1"}, {Name: "sidecar", ContainerID: "cri://2"}}

	body, err := inPlacePatch(pod, from, to, newRev)
	if err != nil {
		t.Fatal(err)
	}
	original, _ := json.Marshal(pod)
	patched, err := strategicpatch.StrategicMergePatch(original, body, corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Containers[0].Image != "a:1" || got.Spec.Containers[1].Image != "b:2" || len(got.Spec.Containers) != 2 {
		t.Errorf("containers after the patch: %+v", got.Spec.Containers)
	}
	if _, left := got.Labels["old"]; left || got.Labels[RevisionLabel] != newRev || got.Labels[NameLabel] != "agent" {
		t.Errorf("labels after the patch: %v", got.Labels)
	}
	if got.Annotations["team"] != "platform" || got.Annotations["added-by-someone"] != "keep" {
		t.Errorf("annotations after the patch: %v", got.Annotations)
	}
	if got.ResourceVersion != "42" {
		t.Errorf("the patch does not carry the resourceVersion read: %q", got.ResourceVersion)
	}
	st, ok := inPlaceStateOf(&got)
	if !ok || !cmp.Equal(st.Containers, map[string]string{"sidecar": "cri://2"}) || st.Revision != newRev {
		t.Errorf("recorded state: %+v %v", st, ok)
	}
}

// A pod updated in place is neither ready nor available until every updated container has started again under a
// new ID and is ready; minReadySeconds counts from that start.
func TestInPlaceRestartGatesAvailability(t *testing.T) {
	pod := testPod("pa", newRev, available)
	pod.Annotations = map[string]string{InPlaceUpdateAnnotation: `{"revision":"new","containers":{"app":"cri://1"}}`}
	running := func(id string, ready bool, started time.Time) {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: id, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	}
	check := func(step string, wantReady, wantAvailable bool, minReady int32) {
		t.Helper()
		if got := isReady(pod); got != wantReady {
			t.Errorf("%s: ready %v, want %v", step, got, wantReady)
		}
		if got, _ := availability(pod, minReady, now); got != wantAvailable {
			t.Errorf("%s: available %v, want %v", step, got, wantAvailable)
		}
	}
	running("cri://1", true, now.Add(-time.Hour))
	check("the old container still runs", false, false, 0)
	running("cri://2", false, now.Add(-time.Second))
	check("the new container is not ready yet", false, false, 0)
	running("cri://2", true, now.Add(-5*time.Second))
	check("the new container is ready", true, true, 0)
	check("ready for 5s of minReadySeconds 10", true, false, 10)
	if _, wait := availability(pod, 10, now); wait != 5*time.Second {
		t.Errorf("wait for availability: %v, want 5s", wait)
	}
	pod.Labels[RevisionLabel] = "newer" // updated again since, by a pod of another revision: the record is stale
	running("cri://1", true, now.Add(-time.Hour))
	check("a record of another revision", true, true, 0)
}

// With in place allowed, an old pod of a revision that can be patched is updated instead of deleted, within the
// same maxUnavailable budget; other revisions are replaced as before.
func TestPlanUpdatesInPlace(t *testing.T) {
	inPlace := func(maxUnavailable int) strategy {
		return strategy{maxUnavailable: maxUnavailable, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	}
	for name, tc := range map[string]struct {
		nodes []nodeView
		s     strategy
		want  []string
	}{
		"budget of one": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available))},
			s:     inPlace(1),
			want:  []string{"update pa@new"},
		},
		// pa is unavailable already: updating it costs nothing, and it leaves the budget of 1 spent.
		"an unavailable old pod costs nothing": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, starting)), view("b", testPod("pb", oldRev, available)),
				view("c", testPod("pc", oldRev, available))},
			s:    inPlace(2),
			want: []string{"update pa@new", "update pb@new"},
		},
		"a pod updating in place holds the budget": {
			nodes: []nodeView{view("a", updating(testPod("pa", newRev, available))), view("b", testPod("pb", oldRev, available))},
			s:     inPlace(1),
		},
		"a revision that cannot be patched is replaced": {
			nodes: []nodeView{view("a", testPod("pa", "other", available)), view("b", testPod("pb", oldRev, available))},
			s:     inPlace(2),
			want:  []string{"delete pa (Update)", "update pb@new"},
		},
		"in place not allowed": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available))},
			s:     strategy{maxUnavailable: 1, inPlaceFrom: map[string]bool{oldRev: true}},
			want:  []string{"delete pa (Update)"},
		},
		"paused": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available))},
			s:     func() strategy { s := inPlace(1); s.paused = true; return s }(),
		},
		"partition holds the last node back": {
			nodes: []nodeView{view("a", testPod("pa", oldRev, available)), view("b", testPod("pb", oldRev, available))},
			s:     func() strategy { s := inPlace(2); s.partition = 1; return s }(),
			want:  []string{"update pa@new"},
		},
		"canary selector": {
			nodes: []nodeView{func() nodeView { v := view("a", testPod("pa", oldRev, available)); v.canary = false; return v }(),
				view("b", testPod("pb", oldRev, available))},
			s:    inPlace(2),
			want: []string{"update pb@new"},
		},
	} {
		p := planNodes(tc.nodes, tc.s, newRev, oldRev, now)
		got := summary(p)
		for _, u := range p.updates {
			got = append(got, "update "+u.pod.Name+"@"+u.hash)
		}
		sort.Strings(got)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// Only revisions that differ from the update revision in images, labels and annotations are listed.
func TestInPlaceFrom(t *testing.T) {
	envChanged := testTemplate("a:1")
	envChanged.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	got := inPlaceFrom(map[string]*corev1.PodTemplateSpec{
		newRev: testTemplate("a:2"), oldRev: testTemplate("a:1"), "env": envChanged,
	}, newRev)
	if !cmp.Equal(got, map[string]bool{oldRev: true}) {
		t.Errorf("got %v", got)
	}
	if got := inPlaceFrom(map[string]*corev1.PodTemplateSpec{oldRev: testTemplate("a:1")}, newRev); len(got) != 0 {
		t.Errorf("with no recorded update template: %v", got)
	}
}

// updating marks pod as updated in place to its revision, its container not yet restarted.
func updating(pod *corev1.Pod) *corev1.Pod {
	pod.Annotations = map[string]string{InPlaceUpdateAnnotation: `{"revision":"` + pod.Labels[RevisionLabel] + `","containers":{"app":""}}`}
	return pod
}

// The image a runtime reports matches the spec's however it spells a Docker Hub name.
func TestSameImage(t *testing.T) {
	for _, tc := range []struct {
		reported, spec string
		same           bool
	}{
		{"nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:1.27", "nginx:1.27", true},
		{"docker.io/library/nginx:latest", "nginx", true},
		{"docker.io/grafana/agent:v1", "grafana/agent:v1", true},
		{"docker.io/library/nginx@sha256:abc", "nginx@sha256:abc", true},
		{"localhost/keelson-echo:e2e", "localhost/keelson-echo:e2e", true},
		{"registry.example:5000/agent:v1", "registry.example:5000/agent:v1", true},
		{"docker.io/library/nginx:1.27", "nginx:1.28", false},
		{"localhost/keelson-echo:e2e", "localhost/keelson-echo:e2e-next", false},
		{"registry.example:5000/agent:v1", "agent:v1", false},
	} {
		if got := sameImage(tc.reported, tc.spec); got != tc.same {
			t.Errorf("sameImage(%q, %q) = %v, want %v", tc.reported, tc.spec, got, tc.same)
		}
	}
}

// An update undone before the kubelet restarted the container (the pod is patched back to the image it still runs)
// waits for no restart: the kubelet will not make one, finding the container matching its spec again.
func TestInPlacePatchBackToTheRunningImage(t *testing.T) {
	from, to := testTemplate("a:2"), testTemplate("a:1")
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds1"}}
	pod := newPod(ds, from, "b", "n1")
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "cri://1", Image: "docker.io/library/a:1"}}
	body, err := inPlacePatch(pod, from, to, "a")
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		t.Fatal(err)
	}
	if got := patch.Metadata.Annotations[InPlaceUpdateAnnotation]; got != `{"revision":"a","containers":{}}` {
		t.Errorf("recorded %s, want no container to wait for", got)
	}
}
