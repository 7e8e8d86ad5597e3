package sizer_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/fuzzinput"
	webhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

// fuzzList is up to three quantities of CPU, memory or a GPU, negative ones included.
func fuzzList(in *fuzzinput.Source) corev1.ResourceList {
	n := in.Intn(4)
	if n == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for range n {
		out[corev1.ResourceName(in.Pick("cpu", "memory", "nvidia.com/gpu"))] = in.Quantity()
	}
	return out
}

// fuzzSizer builds a WorkloadSizer of any shape: targets of any kind and name, image and template, sizes, resource
// policies with quantities in any order, runtimes, budgets in and out of range, a Service and an Ingress.
func fuzzSizer(in *fuzzinput.Source) *sizerv1alpha1.WorkloadSizer {
	w := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: in.Pick("web", "api", ""),
		UID: types.UID(in.Pick("u1", "u2"))}}
	s := &w.Spec
	if in.Intn(3) != 0 {
		s.TargetRef = &sizerv1alpha1.TargetRef{APIVersion: in.Pick("", "apps/v1", "apps/v2"),
			Kind: in.Word("Deployment", "StatefulSet", "DaemonSet", ""), Name: in.Word("web", "api", "")}
	}
	s.Image = in.Pick("", "nginx", "")
	if in.Intn(3) == 0 {
		s.Template = &corev1.PodTemplateSpec{}
		for range in.Intn(3) {
			s.Template.Spec.Containers = append(s.Template.Spec.Containers, corev1.Container{Name: in.Word("app", "c"), Image: in.Pick("x", "")})
		}
	}
	if in.Bool() {
		size := int32(in.SmallInt(5))
		s.Size = &size
	}
	for range in.Intn(4) {
		s.Resources = append(s.Resources, sizerv1alpha1.ContainerResources{ContainerName: in.Word("app", "*", "sidecar", ""),
			Requests: fuzzList(in), Limits: fuzzList(in), MinAllowed: fuzzList(in), MaxAllowed: fuzzList(in),
			ControlledValues: sizerv1alpha1.ControlledValues(in.Pick("", "RequestsOnly", "RequestsAndLimits"))})
	}
	s.UpdateMode = sizerv1alpha1.UpdateMode(in.Pick("", "Rolling", "InPlace", "Off"))
	if in.Intn(3) == 0 {
		s.Runtime = &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{sizerv1alpha1.Language(in.Pick("go", "java"))},
			MemoryHeadroomPercent: ptr.To(int32(in.SmallInt(95)))}
	}
	if in.Intn(3) == 0 {
		s.Disruption = &sizerv1alpha1.DisruptionSpec{
			Profile:        sizerv1alpha1.DisruptionProfile(in.Pick("", "Stateless", "SingleInstance", "Quorum", "None")),
			MinAvailable:   in.IntOrString(),
			MaxUnavailable: in.IntOrString(), AllowBlockingDrains: in.Bool()}
	}
	if in.Intn(3) == 0 {
		s.Expose = &sizerv1alpha1.ExposeSpec{}
		if in.Bool() {
			s.Expose.Service = &sizerv1alpha1.ServiceExpose{Enabled: in.Bool(), Port: int32(in.SmallInt(3) * 40),
				Type: corev1.ServiceType(in.Pick("", "ClusterIP", "NodePort"))}
		}
		if in.Bool() {
			s.Expose.Ingress = &sizerv1alpha1.IngressExpose{Enabled: in.Bool(), Host: in.Pick("", "example.com"), Path: in.Pick("", "/", "/api")}
		}
	}
	return w
}

var percentage = regexp.MustCompile(`^(100|[1-9]?[0-9])%$`)

// FuzzWorkloadSizerAdmission runs the defaulter and the validator on any WorkloadSizer, as a creation beside other
// sizers and as an update, and checks: no panic; defaulting twice changes nothing more; refusals are Invalid
// errors with spec field paths; budgets are refused exactly as the CRD's CEL refuses them; and an admitted sizer
// holds what CEL cannot check: no negative quantity, no request above its limit, no minAllowed above its
// maxAllowed, one entry per container.
func FuzzWorkloadSizerAdmission(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x00\x00\x00\x00\x01\x00\x00\x01\x00\x01\x01\x00\x02\x01\x01\x03\x01\x00\x02\x01\x01\x01\x00\x00\x00\x01"))
	f.Add([]byte("\x01\x01\x01\x01\x01\x01\x02\x00\x00\x00\x02\x00\x03\x01\x02\x02\x02\x01\x00\x03\x00\x00\x01\x00\x02\x00\x00\x00\x00\x00\x03\x02\x02\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		w, other := fuzzSizer(in), fuzzSizer(in)
		ctx := context.Background()

		defaulted := w.DeepCopy()
		webhook.Default(defaulted)
		twice := defaulted.DeepCopy()
		webhook.Default(twice)
		if !apiequality.Semantic.DeepEqual(defaulted, twice) {
			t.Fatalf("defaulting again changed the object:\n%+v\n%+v", defaulted.Spec, twice.Spec)
		}
		_ = webhook.Warnings(defaulted)

		errs := webhook.Validate(defaulted)
		for _, e := range append(errs, webhook.ValidateUnique(defaulted, []sizerv1alpha1.WorkloadSizer{*other})...) {
			if !strings.HasPrefix(e.Field, "spec.") {
				t.Fatalf("error without a spec field path: %v", e)
			}
		}
		if d := defaulted.Spec.Disruption; d != nil {
			budgetAgreesWithCEL(t, "spec.disruption.minAvailable", d.MinAvailable, errs)
			budgetAgreesWithCEL(t, "spec.disruption.maxUnavailable", d.MaxUnavailable, errs)
		}
		if _, err := (webhook.Validator{}).ValidateUpdate(ctx, other, defaulted); err != nil && !apierrors.IsInvalid(err) {
			t.Fatalf("update refusal is not Invalid: %v", err)
		}
		if _, err := (webhook.Validator{}).ValidateCreate(ctx, defaulted); err != nil {
			if !apierrors.IsInvalid(err) {
				t.Fatalf("refusal is not Invalid: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range defaulted.Spec.Resources {
			if seen[r.ContainerName] {
				t.Fatalf("admitted two entries for container %q", r.ContainerName)
			}
			seen[r.ContainerName] = true
			for _, list := range []corev1.ResourceList{r.Requests, r.Limits, r.MinAllowed, r.MaxAllowed} {
				for name, q := range list {
					if q.Sign() < 0 {
						t.Fatalf("admitted a negative %s of %s", name, q.String())
					}
				}
			}
			for _, pair := range [][2]corev1.ResourceList{{r.Requests, r.Limits}, {r.MinAllowed, r.MaxAllowed}} {
				for name, low := range pair[0] {
					if high, ok := pair[1][name]; ok && low.Cmp(high) > 0 {
						t.Fatalf("admitted %s %s above %s", name, low.String(), high.String())
					}
				}
			}
		}
	})
}

// budgetAgreesWithCEL compares the webhook's verdict on a budget with the CRD's rule.
func budgetAgreesWithCEL(t *testing.T, path string, v *intstr.IntOrString, errs field.ErrorList) {
	t.Helper()
	if v == nil {
		return
	}
	refused := false
	for _, e := range errs {
		refused = refused || (e.Field == path && e.Type == field.ErrorTypeInvalid)
	}
	celRefuses := (v.Type == intstr.Int && v.IntVal < 0) || (v.Type == intstr.String && !percentage.MatchString(v.StrVal))
	if refused != celRefuses {
		t.Fatalf("%s %q: the webhook refuses it: %v, the CRD's CEL: %v", path, v.String(), refused, celRefuses)
	}
}
