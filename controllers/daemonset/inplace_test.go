package daemonset

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
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
		"labels only":         {to: func(t *corev1.PodTemplateSpec) { t.Labels["tier"] = "x" }, images: map[string]string{}, ok: true},
		// An annotation changed to make pods restart (a config checksum) must not be taken in place, restarting nothing.
		"an annotation":              {to: func(t *corev1.PodTemplateSpec) { t.Annotations["checksum/config"] = "2" }},
		"an annotation and an image": {to: func(t *corev1.PodTemplateSpec) { t.Annotations = nil; t.Spec.Containers[0].Image = "a:2" }},
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
		// A pod's imagePullPolicy cannot change, and the apiserver defaults it from the tag: Always for :latest (or
		// no tag), IfNotPresent otherwise. A move between the two would keep the old policy in place.
		"an image moved to latest": {to: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "a:latest" }},
		"an image moved to no tag": {to: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "registry:5000/a" }},
		"an image moved to a digest": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "a@sha256:" + strings.Repeat("0", 64)
		}, images: map[string]string{"app": "a@sha256:" + strings.Repeat("0", 64)}, ok: true},
		"an image moved to latest, its pull policy set": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[1].Image = "b:latest"
		}, images: map[string]string{"sidecar": "b:latest"}, ok: true},
		"an image and a command": {to: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "a:2"
			t.Spec.Containers[0].Command = []string{"x"}
		}},
	} {
		from := testTemplate("a:1", "b:1")
		from.Spec.Containers[1].ImagePullPolicy = corev1.PullAlways
		to := from.DeepCopy()
		tc.to(to)
		images, ok := inPlaceImages(from, to)
		if ok != tc.ok || (ok && !cmp.Equal(images, tc.images)) {
			t.Errorf("%s: got %v %v, want %v %v", name, images, ok, tc.images, tc.ok)
		}
	}
}

// The patch changes the images, moves the pod's labels to the new revision's (removing only keys the old revision's
// pods had, never the controller's own), records the containers that must restart, leaves others' annotations alone,
// and fails on a pod changed since it was read.
func TestInPlacePatch(t *testing.T) {
	from := testTemplate("a:1", "b:1")
	from.Labels["old"] = "x"
	to := testTemplate("a:1", "b:2")
	to.Labels[commonlabels.ManagedBy] = "Helm" // a chart's label: the controller's own value wins, as on a new pod
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds1"}}
	pod := newPod(ds, from, oldRev, "n1")
	pod.Name, pod.ResourceVersion, pod.UID = "agent-x", "42", "u1"
	pod.Labels["added-by-someone"] = "keep"
	pod.Annotations["added-by-someone"] = "keep"
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "cri://1"}, {Name: "sidecar", ContainerID: "cri://2"}}

	got := applyPatch(t, pod, inPlacePatchOf(t, ds, pod, from, to, newRev))
	if got.Spec.Containers[0].Image != "a:1" || got.Spec.Containers[1].Image != "b:2" || len(got.Spec.Containers) != 2 {
		t.Errorf("containers after the patch: %+v", got.Spec.Containers)
	}
	want := map[string]string{"app": "agent", "team": "", RevisionLabel: newRev, daemonsetv1alpha1.NameLabel: "agent", commonlabels.ManagedBy: commonlabels.Keelson,
		commonlabels.PartOf: commonlabels.Keelson, "added-by-someone": "keep"}
	delete(want, "team")
	if !cmp.Equal(got.Labels, want) {
		t.Errorf("labels after the patch: %v", cmp.Diff(want, got.Labels))
	}
	if got.Annotations["team"] != "infra" || got.Annotations["added-by-someone"] != "keep" {
		t.Errorf("annotations after the patch: %v", got.Annotations)
	}
	if got.ResourceVersion != "42" {
		t.Errorf("the patch does not carry the resourceVersion read: %q", got.ResourceVersion)
	}
	st, ok := inPlaceStateOf(&got)
	if !ok || !cmp.Equal(st.Containers, map[string]runningContainer{"sidecar": {ID: "cri://2", Image: "b:1"}}) || st.Revision != newRev {
		t.Errorf("recorded state: %+v %v", st, ok)
	}
}

// What is waited for follows what the kubelet will restart: a container whose spec names another image than the one
// it was started with, compared as written.
func TestInPlaceRestarts(t *testing.T) {
	running := func(images ...string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{RevisionLabel: "r1"}}}
		for i, image := range images {
			name := []string{"app", "sidecar"}[i]
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name, Image: image})
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, ContainerID: "cri://" + name + "-1"})
		}
		return pod
	}
	pending := func(pod *corev1.Pod, state string) *corev1.Pod {
		pod.Annotations = map[string]string{InPlaceUpdateAnnotation: state}
		return pod
	}
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		images map[string]string
		want   map[string]runningContainer
	}{
		"an image changes": {running("a:1", "b:1"), map[string]string{"sidecar": "b:2"},
			map[string]runningContainer{"sidecar": {ID: "cri://sidecar-1", Image: "b:1"}}},
		// The runtime may report "docker.io/library/nginx:1.27"; the kubelet compares the spec as written, and restarts.
		"the same image spelt another way": {running("nginx:1.27"), map[string]string{"app": "docker.io/library/nginx:1.27"},
			map[string]runningContainer{"app": {ID: "cri://app-1", Image: "nginx:1.27"}}},
		// Patched to a:2, the container not restarted yet, and patched back: the kubelet finds it matching its spec.
		"an update undone before the kubelet acted": {
			pending(running("a:2"), `{"revision":"r1","containers":{"app":{"id":"cri://app-1","image":"a:1"}}}`),
			map[string]string{"app": "a:1"}, map[string]runningContainer{}},
		// app's earlier update is still pending when sidecar's comes: both are waited for.
		"an update on top of a pending one": {
			pending(running("a:2", "b:1"), `{"revision":"r1","containers":{"app":{"id":"cri://app-1","image":"a:1"}}}`),
			map[string]string{"sidecar": "b:2"},
			map[string]runningContainer{"app": {ID: "cri://app-1", Image: "a:1"}, "sidecar": {ID: "cri://sidecar-1", Image: "b:1"}}},
		"a pending update done since": {
			pending(func() *corev1.Pod {
				p := running("a:2")
				p.Status.ContainerStatuses[0].ContainerID = "cri://app-2"
				return p
			}(),
				`{"revision":"r1","containers":{"app":{"id":"cri://app-1","image":"a:1"}}}`),
			map[string]string{"app": "a:3"}, map[string]runningContainer{"app": {ID: "cri://app-2", Image: "a:2"}}},
	} {
		if got := inPlaceRestarts(tc.pod, tc.images); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: %s", name, cmp.Diff(tc.want, got))
		}
	}
}

// inPlacePatchOf is inPlacePatch's body, or the test's end.
func inPlacePatchOf(t *testing.T, ds *daemonsetv1alpha1.DaemonSet, pod *corev1.Pod, from, to *corev1.PodTemplateSpec, hash string) []byte {
	t.Helper()
	body, err := inPlacePatch(ds, pod, from, to, hash, now)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// applyPatch applies a strategic merge patch to pod as the apiserver would.
func applyPatch(t *testing.T, pod *corev1.Pod, body []byte) corev1.Pod {
	t.Helper()
	original, _ := json.Marshal(pod)
	patched, err := strategicpatch.StrategicMergePatch(original, body, corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// New pods and pods whose update in place is done get their readiness gate opened; a pod still waiting for its
// containers, one being updated or deleted by the same plan, and one without the gate do not.
func TestPlanGates(t *testing.T) {
	gated := func(name, rev string, st corev1.ConditionStatus) *corev1.Pod {
		p := testPod(name, rev, available)
		p.UID = types.UID(name)
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: InPlaceReadyCondition}}
		if st != "" {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: InPlaceReadyCondition, Status: st})
		}
		return p
	}
	s := strategy{maxUnavailable: 2, inPlace: true, inPlaceFrom: map[string]bool{oldRev: true}}
	nodes := []nodeView{
		view("a", gated("new-pod", newRev, "")),
		view("b", gated("open", newRev, corev1.ConditionTrue)),
		view("c", updating(gated("restarting", newRev, corev1.ConditionFalse))),
		view("d", gated("restarted", newRev, corev1.ConditionFalse)),
		view("e", testPod("ungated", newRev, available)),
		view("f", gated("to-update", oldRev, "")),
	}
	p := planNodes(nodes, s, newRev, oldRev, now)
	var got []string
	for _, pod := range p.gatesReady {
		got = append(got, pod.Name)
	}
	if want := []string{"new-pod", "restarted"}; !cmp.Equal(got, want) {
		t.Errorf("gates opened: %v, want %v", got, want)
	}
	if len(p.updates) != 1 || p.updates[0].pod.Name != "to-update" {
		t.Errorf("updates: %+v", p.updates)
	}
}

// A pod updated in place is neither ready nor available until every updated container has started again under a
// new ID and is ready; minReadySeconds counts from that start.
func TestInPlaceRestartGatesAvailability(t *testing.T) {
	pod := testPod("pa", newRev, available)
	pod.Annotations = map[string]string{InPlaceUpdateAnnotation: `{"revision":"new","containers":{"app":{"id":"cri://1","image":"a:1"}}}`}
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
		// A node tainted NoSchedule after its pod started admits no new pod: in place is its only way to the update.
		"a node that admits no new pod is updated in place": {
			nodes: []nodeView{tainted(view("a", testPod("pa", oldRev, available))), view("b", testPod("pb", newRev, available))},
			s:     inPlace(1),
			want:  []string{"update pa@new"},
		},
		"a node that admits no new pod uses the budget while it updates in place": {
			nodes: []nodeView{tainted(view("a", updating(testPod("pa", newRev, available)))), view("b", testPod("pb", oldRev, available))},
			s:     inPlace(1),
		},
		"a node that admits no new pod keeps a pod that cannot be patched": {
			nodes: []nodeView{tainted(view("a", testPod("pa", "other", available))), view("b", testPod("pb", newRev, available))},
			s:     inPlace(1),
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
	pod.Annotations = map[string]string{InPlaceUpdateAnnotation: `{"revision":"` + pod.Labels[RevisionLabel] + `","containers":{"app":{"id":"","image":"x"}}}`}
	return pod
}

// Closing the gate takes the pod out of its Services in the same write: Ready turns False with the gate's
// condition, as Kruise does, rather than when the kubelet next syncs the pod's status, by which time it may already
// be stopping the containers the update changed. Opening it leaves Ready to the kubelet, which knows whether the
// containers are ready.
func TestClosingTheGateTurnsReadyFalseAtOnce(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}
	conditions := func(status corev1.ConditionStatus) map[string]string {
		body, err := gatePatch(pod, status, "UpdatingInPlace", "", now)
		if err != nil {
			t.Fatal(err)
		}
		var patch struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &patch); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range patch.Status.Conditions {
			out[c.Type] = c.Status
		}
		return out
	}
	if got, want := conditions(corev1.ConditionFalse), map[string]string{string(InPlaceReadyCondition): "False",
		string(corev1.PodReady): "False"}; !cmp.Equal(got, want) {
		t.Fatalf("closing: %v, want %v", got, want)
	}
	if got, want := conditions(corev1.ConditionTrue), map[string]string{string(InPlaceReadyCondition): "True"}; !cmp.Equal(got, want) {
		t.Fatalf("opening: %v, want %v", got, want)
	}
}
