package pipeline_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/fuzzinput"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
	webhook "github.com/keelson-dev/keelson/webhooks/pipeline"
)

// stepNames are names steps draw from: short ones that can form any graph, the names unnamed steps get by default
// (so an explicit name can collide with one), and invalid ones.
var stepNames = []string{"a", "b", "c", "step-0", "step-1", "", "B_ad", "-x"}

// fuzzSteps builds up to six steps whose names and next steps come from stepNames, so that duplicates, missing
// next steps, self references, fan-outs and cycles all occur.
func fuzzSteps(in *fuzzinput.Source) []inferencev1alpha1.Step {
	steps := make([]inferencev1alpha1.Step, in.Intn(7))
	for i := range steps {
		s := &steps[i]
		s.Name = in.Pick(stepNames...)
		if in.Intn(3) == 0 {
			for range in.Intn(4) {
				s.Next = append(s.Next, in.Pick(stepNames...))
			}
		}
	}
	return steps
}

// FuzzWire wires any steps and checks the wiring: it never points at a step that does not exist, and a wiring
// admitted without errors has no step feeding itself, no cycle (checked by removing steps without predecessors
// until none is left), follows each step's next steps or else the step after it, and has an entry step.
func FuzzWire(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x03\x00\x01\x01\x02\x01\x02\x00\x00\x01\x02"))
	f.Add([]byte("\x04\x00\x00\x01\x01\x00\x02\x00\x01\x00\x03\x05\x00\x06\x02\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		steps := fuzzSteps(fuzzinput.New(data))
		w, errs := pipelinespec.Wire(steps)
		names := map[string]bool{}
		for i := range steps {
			names[pipelinespec.StepName(steps, i)] = true
		}
		for from, next := range w {
			if !names[from] {
				t.Fatalf("wiring from %q, which is no step", from)
			}
			for _, n := range next {
				if !names[n] {
					t.Fatalf("%s sends to %q, which is no step", from, n)
				}
			}
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.steps") {
				t.Fatalf("error without a step's field path: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		for i, s := range steps {
			name := pipelinespec.StepName(steps, i)
			want := s.Next
			if len(want) == 0 && i+1 < len(steps) {
				want = []string{pipelinespec.StepName(steps, i+1)}
			}
			if !slices.Equal(w[name], want) {
				t.Fatalf("%s sends to %v, want %v", name, w[name], want)
			}
			if slices.Contains(w[name], name) {
				t.Fatalf("%s feeds itself", name)
			}
		}
		if len(names) != len(steps) {
			t.Fatalf("duplicate step names admitted: %v", names)
		}
		if cycle := remainsAfterTopologicalSort(w, names); len(cycle) > 0 {
			t.Fatalf("admitted a cycle through %v", cycle)
		}
		if len(steps) > 0 && pipelinespec.EntryStep(steps, w) == "" {
			t.Fatal("an admitted pipeline has no entry step")
		}
	})
}

// remainsAfterTopologicalSort removes, again and again, the steps nothing feeds; what remains lies on a cycle.
func remainsAfterTopologicalSort(w pipelinespec.Wiring, names map[string]bool) []string {
	fedBy := map[string]int{}
	for _, next := range w {
		for _, n := range next {
			fedBy[n]++
		}
	}
	var queue []string
	for n := range names {
		if fedBy[n] == 0 {
			queue = append(queue, n)
		}
	}
	removed := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		removed++
		for _, next := range w[n] {
			if fedBy[next]--; fedBy[next] == 0 {
				queue = append(queue, next)
			}
		}
	}
	if removed == len(names) {
		return nil
	}
	var left []string
	for n := range names {
		if fedBy[n] > 0 {
			left = append(left, n)
		}
	}
	return left
}

// fuzzPipeline builds a Pipeline of any shape: names that can or cannot name Services, both storage types with
// and without their parameters, steps with ports, listenPorts, GPUs, models, environments and readiness checks.
func fuzzPipeline(in *fuzzinput.Source) *inferencev1alpha1.Pipeline {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: in.Word("face", "a", "a-b", "9lives", "x.y",
		strings.Repeat("p", 60))}}
	ms := &p.Spec.ModelStorage
	ms.Type = inferencev1alpha1.StorageType(in.Word("nfs", "pvc"))
	if in.Bool() {
		ms.CSIParameter = map[string]string{"server": in.Pick("nfs", ""), "share": in.Pick("/m", "")}
	}
	ms.ClaimName = in.Pick("", "models")
	p.Spec.Steps = fuzzSteps(in)
	for i := range p.Spec.Steps {
		s := &p.Spec.Steps[i]
		s.Image = in.Pick("x", "")
		s.Location = in.Word("", "gpu-a", "rack 1")
		s.Model = in.Word("", "face/v1", "/etc", "../up", "a/../../b", "a\\..\\b")
		if in.Bool() {
			s.Args = map[string]string{"listenPort": in.Word("9080", "0", "65536", "http", "-1")}
		}
		if in.Bool() {
			s.Port = int32(in.SmallInt(3)) * 4000
		}
		if in.Bool() {
			s.Replicas = ptr.To(int32(in.SmallInt(3)))
		}
		if in.Intn(3) == 0 {
			gpu := corev1.ResourceName(in.Pick("nvidia.com/gpu", "cpu", "example.com/fpga"))
			s.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: in.Quantity()}}
			if in.Bool() {
				s.Resources.Limits = corev1.ResourceList{gpu: in.Quantity()}
			}
		}
		for range in.Intn(3) {
			s.Env = append(s.Env, corev1.EnvVar{Name: in.Word("LOG", "MODEL_PATH", "NEXT_STEP_URL", ""), Value: "v"})
		}
		if in.Intn(3) == 0 {
			s.Readiness = &inferencev1alpha1.Readiness{Protocol: inferencev1alpha1.ReadinessProtocol(in.Pick("", "OpenInference", "grpc"))}
			if in.Bool() {
				s.Readiness.HTTPGet = &inferencev1alpha1.HTTPGetReadiness{Path: in.Word("/ready", "ready", "/a b", ""),
					Port: int32(in.SmallInt(2)) * 40000}
			}
		}
		s.Strategy = ""
		if in.Intn(4) == 0 {
			s.Strategy = "Recreate"
		}
	}
	return p
}

// schemaAdmits reports whether the CRD's schema admits the ranges fuzzPipeline may break: the apiserver checks
// them before it calls the validating webhook, so the webhook never sees what they refuse.
func schemaAdmits(p *inferencev1alpha1.Pipeline) bool {
	for _, s := range p.Spec.Steps {
		if s.Port < 0 || s.Port > 65535 || ptr.Deref(s.Replicas, 0) < 0 {
			return false
		}
	}
	return true
}

// FuzzPipelineAdmission runs the defaulter and the validator on any Pipeline, and checks: no panic; defaulting
// twice changes nothing more; an update that changes nothing keeps every stored default; refusals are Invalid
// errors with field paths; and a pipeline the schema and the webhook admit is one the controller can build: step object names that are
// DNS-1035 labels of at most 63 characters, ports in range, a wiring without errors, model paths inside the storage.
func FuzzPipelineAdmission(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x00\x01\x00\x00\x00\x02\x00\x00\x00\x01\x01\x00\x01\x01\x00\x00\x00\x00\x01\x01\x00\x00\x00"))
	f.Add([]byte("\x02\x01\x01\x01\x00\x01\x03\x02\x00\x03\x01\x01\x03\x01\x01\x01\x00\x01\x00\x01\x01\x00\x01\x01\x01\x00\x00\x02\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		p := fuzzPipeline(in)
		ctx := context.Background()

		defaulted := p.DeepCopy()
		webhook.Default(defaulted)
		twice := defaulted.DeepCopy()
		webhook.Default(twice)
		if !apiequality.Semantic.DeepEqual(defaulted, twice) {
			t.Fatalf("defaulting again changed the object:\n%+v\n%+v", defaulted.Spec, twice.Spec)
		}
		unchanged := defaulted.DeepCopy()
		webhook.FollowDefaults(defaulted, unchanged)
		webhook.Default(unchanged)
		if !apiequality.Semantic.DeepEqual(defaulted.Spec, unchanged.Spec) {
			t.Fatalf("an unchanged update changed the stored defaults:\n%+v\n%+v", defaulted.Spec, unchanged.Spec)
		}

		errs := webhook.Validate(defaulted)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.") && !strings.HasPrefix(e.Field, "metadata.name") {
				t.Fatalf("error without a field path: %v", e)
			}
		}
		_ = webhook.NameClashes(defaulted, []inferencev1alpha1.Pipeline{*fuzzPipeline(in)})
		if _, err := (webhook.Validator{}).ValidateUpdate(ctx, p, defaulted); err != nil && !apierrors.IsInvalid(err) {
			t.Fatalf("update refusal is not Invalid: %v", err)
		}
		if _, err := (webhook.Validator{}).ValidateCreate(ctx, defaulted); err != nil {
			if !apierrors.IsInvalid(err) {
				t.Fatalf("refusal is not Invalid: %v", err)
			}
			return
		}
		if !schemaAdmits(defaulted) {
			return // the apiserver refuses it before the validating webhook is asked
		}
		w, wiringErrs := pipelinespec.Wire(defaulted.Spec.Steps)
		if len(wiringErrs) > 0 || pipelinespec.EntryStep(defaulted.Spec.Steps, w) == "" {
			t.Fatalf("admitted a wiring with errors %v", wiringErrs)
		}
		for i, s := range defaulted.Spec.Steps {
			object := pipelinespec.StepObjectName(defaulted, pipelinespec.StepName(defaulted.Spec.Steps, i))
			if msgs := validation.IsDNS1035Label(object); len(msgs) > 0 {
				t.Fatalf("admitted step object name %q: %v", object, msgs)
			}
			if port := pipelinespec.StepPort(s); port < 1 || port > 65535 {
				t.Fatalf("admitted step port %d", port)
			}
			if v, ok := s.Args["listenPort"]; ok {
				if n, err := strconv.Atoi(v); err != nil || n != int(pipelinespec.StepPort(s)) && s.Port == 0 {
					t.Fatalf("admitted listenPort %q, serving on %d", v, pipelinespec.StepPort(s))
				}
			}
			if strings.HasPrefix(s.Model, "/") || slices.Contains(strings.FieldsFunc(s.Model, func(r rune) bool { return r == '/' || r == '\\' }), "..") {
				t.Fatalf("admitted model path %q outside the storage", s.Model)
			}
		}
	})
}

// Found by FuzzPipelineAdmission: two steps sharing a name (stored while the webhook was down) pair with no old
// step, so an update that changes nothing keeps the strategy the user set on the first.
func TestFollowDefaultsPairsNoStepsByASharedName(t *testing.T) {
	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	old := valid("shared")
	old.Spec.Steps = []inferencev1alpha1.Step{{Name: "a", Image: "x", Strategy: appsv1.RecreateDeploymentStrategyType},
		{Name: "a", Image: "y", Resources: gpu}}
	webhook.Default(old)
	cur := old.DeepCopy()
	webhook.FollowDefaults(old, cur)
	webhook.Default(cur)
	if got := cur.Spec.Steps[0].Strategy; got != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the first step's own Recreate became %s", got)
	}
}
