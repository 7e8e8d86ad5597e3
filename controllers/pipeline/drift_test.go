package pipeline

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/controllers/internal/apply"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

func TestCovers(t *testing.T) {
	for name, tc := range map[string]struct {
		live, desired any
		want          bool
	}{
		"extra map keys are someone else's": {map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		"changed value":                     {map[string]any{"a": "2"}, map[string]any{"a": "1"}, false},
		"missing value":                     {map[string]any{}, map[string]any{"a": "1"}, false},
		"replicas scaled":                   {map[string]any{"replicas": int64(3)}, map[string]any{"replicas": int64(1)}, false},
		"defaulted fields of a named element": {[]any{map[string]any{"name": "x", "protocol": "TCP"}},
			[]any{map[string]any{"name": "x"}}, true},
		"extra named element (a sidecar)": {[]any{map[string]any{"name": "x"}, map[string]any{"name": "sidecar"}},
			[]any{map[string]any{"name": "x"}}, true},
		"named element gone":  {[]any{map[string]any{"name": "y"}}, []any{map[string]any{"name": "x"}}, false},
		"atomic list grew":    {[]any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}, []any{map[string]any{"key": "a"}}, false},
		"scalar list differs": {[]any{"--a=1", "--b=2"}, []any{"--a=1"}, false},
		"null sets nothing":   {nil, nil, true},
		"empty sets nothing":  {nil, map[string]any{}, true},
		"mount keyed by path": {[]any{map[string]any{"name": "m", "mountPath": "/other"}, map[string]any{"name": "m", "mountPath": "/models"}},
			[]any{map[string]any{"name": "m", "mountPath": "/models"}}, true},
	} {
		if got := covers(tc.live, tc.desired); got != tc.want {
			t.Errorf("%s: covers = %v, want %v", name, got, tc.want)
		}
	}
}

// A live step Deployment as the apiserver returns it (defaults filled in) needs no apply; scaled by someone, it does.
func TestNeedsApplyOnDrift(t *testing.T) {
	p := sample()
	w, _ := pipelinespec.Wire(p.Spec.Steps)
	desired := DesiredDeployment(p, 0, w, ModelFetch{})
	live := desired.DeepCopy()
	// What the apiserver adds.
	live.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}
	live.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	live.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	c := &live.Spec.Template.Spec.Containers[0]
	c.TerminationMessagePath, c.ImagePullPolicy = "/dev/termination-log", corev1.PullIfNotPresent
	c.Ports[0].Protocol = corev1.ProtocolTCP
	c.ReadinessProbe.TimeoutSeconds, c.ReadinessProbe.FailureThreshold = 1, 3
	live.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	live.Spec.Template.Spec.Containers = append(live.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "mesh"})
	stamp(t, live, desired)
	if needed, err := needsApply(live, desired); err != nil || needed {
		t.Fatalf("a live Deployment with only defaults and others' fields added needs no apply: %v %v", needed, err)
	}
	scaled := live.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	if needed, _ := needsApply(scaled, desired); !needed {
		t.Fatal("a scaled step Deployment must be applied again")
	}
	edited := live.DeepCopy()
	edited.Spec.Template.Spec.Containers[0].Env[0].Value = "other"
	if needed, _ := needsApply(edited, desired); !needed {
		t.Fatal("an edited env var must be applied again")
	}
	svc := DesiredService(p, 0)
	liveSvc := svc.DeepCopy()
	liveSvc.Spec.Ports[0].Port = 1234
	stamp(t, liveSvc, svc)
	if needed, _ := needsApply(liveSvc, svc); !needed {
		t.Fatal("an edited Service port must be applied again")
	}
}

// stamp gives live the hash annotation of desired, as the last apply did.
func stamp(t *testing.T, live, desired client.Object) {
	t.Helper()
	h, err := apply.Hash(desired)
	if err != nil {
		t.Fatal(err)
	}
	live.SetAnnotations(map[string]string{apply.HashAnnotation: h})
}
