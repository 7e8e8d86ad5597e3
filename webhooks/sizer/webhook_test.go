//go:build integration

package sizer_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/testenv"
	webhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

var withWebhook, withoutWebhook *testenv.Env

var pair *testenv.WebhookPair

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWebhookTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{sizerv1alpha1.AddToScheme}},
		"charts/keelson/files/webhooks/workload-sizer.yaml", func(p *testenv.WebhookPair) {
			pair, withWebhook, withoutWebhook = p, p.With, p.Without
		}))
}

func serveWebhooks(t *testing.T) { pair.Serve(t, webhook.SetupWithManager) }

func namespace(t *testing.T, env *testenv.Env) string { return env.Namespace(t, "wh") }

func valid(name string) *sizerv1alpha1.WorkloadSizer {
	return &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: "web"}, Size: ptr.To[int32](2)}}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

// Every invalid spec is rejected with its field path, with the webhook and (where CEL can express the rule) without.
func TestInvalidSpecsAreRejectedWithFieldPaths(t *testing.T) {
	serveWebhooks(t)
	table := map[string]struct {
		mutate                      func(*sizerv1alpha1.WorkloadSizer)
		withWebhook, withoutWebhook string
	}{
		"unsupported kind": {func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.TargetRef.Kind = "DaemonSet" },
			"spec.targetRef.kind", "spec.targetRef.kind"},
		"no target name": {func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.TargetRef.Name = "" },
			"spec.targetRef.name", "spec.targetRef.name"},
		"negative size": {func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = ptr.To[int32](-1) },
			"spec.size", "spec.size"},
		"image and template": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Image = "x"
			w.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "b"}}}}
		}, "set image or template, not both", "set image or template, not both"},
		"unknown update mode": {func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.UpdateMode = "Sometimes" },
			"spec.updateMode", "spec.updateMode"},
		"unknown runtime language": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Runtime = &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"cobol"}}
		}, "spec.runtime.languages[0]", "spec.runtime.languages[0]"},
		"headroom above 90%": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Runtime = &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](95)}
		}, "spec.runtime.memoryHeadroomPercent", "spec.runtime.memoryHeadroomPercent"},
		"unknown profile": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: "Best"}
		}, "spec.disruption.profile", "spec.disruption.profile"},
		"minAvailable and maxUnavailable": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileNone,
				MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		}, "not both", "not both"},
		"ingress without service": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Expose = &sizerv1alpha1.ExposeSpec{Ingress: &sizerv1alpha1.IngressExpose{Enabled: true}}
		}, "spec.expose.ingress.enabled", "spec.expose.ingress.enabled"},
		"request above limit": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Resources = []sizerv1alpha1.ContainerResources{{ContainerName: "app",
				Requests: corev1.ResourceList{"cpu": q("2")}, Limits: corev1.ResourceList{"cpu": q("1")}}}
		}, "spec.resources[0].requests[cpu]: Invalid value: \"2\": must be at most its limit", ""},
		"minAllowed above maxAllowed": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Resources = []sizerv1alpha1.ContainerResources{{ContainerName: "app",
				MinAllowed: corev1.ResourceList{"memory": q("2Gi")}, MaxAllowed: corev1.ResourceList{"memory": q("1Gi")}}}
		}, "spec.resources[0].minAllowed[memory]", ""},
		"percentage above 100": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileNone, MinAvailable: ptr.To(intstr.FromString("150%"))}
		}, "spec.disruption.minAvailable", "spec.disruption.minAvailable"},
		"negative percentage": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileNone, MaxUnavailable: ptr.To(intstr.FromString("-5%"))}
		}, "spec.disruption.maxUnavailable", "spec.disruption.maxUnavailable"},
		"negative budget": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileNone, MaxUnavailable: ptr.To(intstr.FromInt32(-1))}
		}, "spec.disruption.maxUnavailable", "spec.disruption.maxUnavailable"},
		"template without containers": {func(w *sizerv1alpha1.WorkloadSizer) {
			w.Spec.Template = &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}
		}, "spec.template.spec.containers", "spec.template.spec.containers"},
	}
	cases := map[string]testenv.AdmissionCase{}
	for name, tc := range table {
		cases[name] = testenv.AdmissionCase{Mutate: func(o client.Object) { tc.mutate(o.(*sizerv1alpha1.WorkloadSizer)) },
			WithWebhook: tc.withWebhook, WithoutWebhook: tc.withoutWebhook}
	}
	pair.CheckAdmissions(t, func(name string) client.Object { return valid(name) }, cases)
}

func TestTargetIsImmutable(t *testing.T) {
	serveWebhooks(t)
	for _, env := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		w := valid("moving")
		w.Namespace = namespace(t, env)
		g.Expect(env.Client.Create(context.Background(), w)).To(Succeed())
		w.Spec.TargetRef.Name = "other"
		err := env.Client.Update(context.Background(), w)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.targetRef is immutable"))

		// Removing it would move the sizer to the Deployment named like itself.
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), w)).To(Succeed())
		w.Spec.TargetRef = nil
		err = env.Client.Update(context.Background(), w)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.targetRef is immutable"))
	}
}

// A second sizer for a workload that one already sizes is refused, with the field and the first sizer's name.
func TestASecondSizerForOneWorkloadIsRefused(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ns := namespace(t, withWebhook)
	first := valid("first")
	first.Namespace = ns
	g.Expect(withWebhook.Client.Create(context.Background(), first)).To(Succeed())
	second := valid("second")
	second.Namespace = ns
	g.Eventually(func() string {
		err := withWebhook.Client.Create(context.Background(), second.DeepCopy())
		if err == nil {
			return "admitted"
		}
		return err.Error()
	}, 10*time.Second, 50*time.Millisecond).Should(And(ContainSubstring("spec.targetRef"), ContainSubstring("WorkloadSizer first")))

	// Another workload is fine; so is the simplest form, whose target is named like the sizer.
	other := valid("other")
	other.Namespace = ns
	other.Spec.TargetRef.Name = "api"
	g.Expect(withWebhook.Client.Create(context.Background(), other)).To(Succeed())
	solo := valid("solo")
	solo.Namespace = ns
	solo.Spec.TargetRef = nil
	g.Expect(withWebhook.Client.Create(context.Background(), solo)).To(Succeed())
	g.Expect(solo.Spec.TargetRef).To(BeNil(), "no targetRef stays none")
}

func TestDefaultsAndWarnings(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	w := valid("defaults")
	w.Namespace = namespace(t, withWebhook)
	w.Spec.Expose = &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 8080}}
	w.Spec.Disruption = &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileSingleInstance}
	c, recorded := withWebhook.ClientWithWarnings(t)
	g.Expect(c.Create(context.Background(), w)).To(Succeed())
	g.Expect(w.Spec.UpdateMode).To(Equal(sizerv1alpha1.UpdateModeRolling))
	g.Expect(w.Spec.Expose.Service.TargetPort).To(BeZero(), "targetPort is left to follow the port, not frozen")
	g.Expect(recorded.All()).To(ContainElement(ContainSubstring("SingleInstance profile blocks node drains")))
	g.Expect(w.Finalizers).To(ConsistOf(sizerv1alpha1.Finalizer), "a new sizer gets the controller's finalizer at creation")
	// Only at creation: the controller removes it on deletion, and an update must not bring it back.
	w.Finalizers = nil
	g.Expect(c.Update(context.Background(), w)).To(Succeed())
	g.Expect(w.Finalizers).To(BeEmpty())
}

// The samples in docs/samples are admitted as they are, with and without the webhook.
func TestSamplesAreValid(t *testing.T) {
	serveWebhooks(t)
	pair.CheckSamples(t, "workloadsizer-*.yaml", 2, func() client.Object { return &sizerv1alpha1.WorkloadSizer{} },
		func(f string) bool { return strings.HasSuffix(f, "-target.yaml") }) // the Deployment the production sample sizes
}

// A headroom of 0 is a value, not an absence: it is stored as 0, with the webhook and without it; a runtime
// without one gets 10.
func TestAZeroHeadroomIsKept(t *testing.T) {
	serveWebhooks(t)
	for _, e := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		for name, headroom := range map[string]any{"zero": int64(0), "unset": nil} {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "sizer.keelson.dev/v1alpha1", "kind": "WorkloadSizer",
				"metadata": map[string]any{"name": "headroom-" + name, "namespace": namespace(t, e)},
				"spec": map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "headroom-" + name},
					"runtime": map[string]any{"languages": []any{"go"}}},
			}}
			if headroom != nil {
				u.Object["spec"].(map[string]any)["runtime"].(map[string]any)["memoryHeadroomPercent"] = headroom
			}
			g.Expect(e.Client.Create(context.Background(), u)).To(Succeed())
			got, _, _ := unstructured.NestedInt64(u.Object, "spec", "runtime", "memoryHeadroomPercent")
			want := map[string]int64{"zero": 0, "unset": 10}[name]
			g.Expect(got).To(Equal(want), "%s headroom", name)
		}
	}
}

// The helm test's probe reaches only the webhook (testenv.WebhookPair.CheckProbe).
func TestProbeReachesOnlyTheWebhook(t *testing.T) {
	serveWebhooks(t)
	pair.CheckProbe(t, webhook.Probe())
}
