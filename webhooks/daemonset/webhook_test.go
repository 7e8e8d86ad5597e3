//go:build integration

package daemonset_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/testenv"
	webhook "github.com/keelson-dev/keelson/webhooks/daemonset"
)

// Two control planes: one with the webhooks installed (served by a manager in each test), one with only the CRD,
// as a cluster looks while the webhook is down.
var withWebhook, withoutWebhook *testenv.Env

var pair *testenv.WebhookPair

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWebhookTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{daemonsetv1alpha1.AddToScheme}},
		"charts/keelson/files/webhooks/daemonset-controller.yaml", func(p *testenv.WebhookPair) {
			pair, withWebhook, withoutWebhook = p, p.With, p.Without
		}))
}

func serveWebhooks(t *testing.T) { pair.Serve(t, webhook.SetupWithManager) }

func namespace(t *testing.T, env *testenv.Env) string { return env.Namespace(t, "wh") }

// invalidDaemonSets are DaemonSets each wrong in one way, with what the apiserver says of them with the webhook and
// without it (the CRD's own rules): the field path, and the message where it tells more.
var invalidDaemonSets = map[string]struct {
	mutate         func(*daemonsetv1alpha1.DaemonSet)
	withWebhook    string
	withoutWebhook string
}{
	"neither image nor containers": {func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "" },
		"spec.image: Required value", "spec.image: Required value"},
	"restartPolicy Never": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}, "spec.template.spec.restartPolicy", "spec.template.spec.restartPolicy"},
	"maxUnavailable above 100%": {func(ds *daemonsetv1alpha1.DaemonSet) {
		rollingUpdate(ds).MaxUnavailable = ptr.To(intstr.FromString("150%"))
	}, "spec.updateStrategy.rollingUpdate.maxUnavailable", "spec.updateStrategy.rollingUpdate.maxUnavailable"},
	"negative maxSurge": {func(ds *daemonsetv1alpha1.DaemonSet) {
		rollingUpdate(ds).MaxSurge = ptr.To(intstr.FromInt32(-1))
	}, "spec.updateStrategy.rollingUpdate.maxSurge", "spec.updateStrategy.rollingUpdate.maxSurge"},
	"maxUnavailable and maxSurge both 0": {func(ds *daemonsetv1alpha1.DaemonSet) {
		ru := rollingUpdate(ds)
		ru.MaxUnavailable, ru.MaxSurge = ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromString("0%"))
	}, "cannot both be 0", "cannot both be 0"},
	"OnDelete with rollingUpdate": {func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.Type = daemonsetv1alpha1.OnDeleteStrategyType
		rollingUpdate(ds).Paused = true
	}, "spec.updateStrategy.rollingUpdate", "spec.updateStrategy.rollingUpdate"},
	"unknown strategy type": {func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" },
		"spec.updateStrategy.type", "spec.updateStrategy.type"},
	"in place with surge": {func(ds *daemonsetv1alpha1.DaemonSet) {
		ru := rollingUpdate(ds)
		ru.InPlace, ru.MaxSurge, ru.MaxUnavailable = daemonsetv1alpha1.InPlaceIfPossible, ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	}, "spec.updateStrategy.rollingUpdate.inPlace: Forbidden: IfPossible requires maxSurge 0",
		"spec.updateStrategy.rollingUpdate.inPlace: Forbidden: IfPossible requires maxSurge 0"},
	"in place with a surge of 0%": {func(ds *daemonsetv1alpha1.DaemonSet) {
		ru := rollingUpdate(ds)
		ru.InPlace, ru.MaxSurge = daemonsetv1alpha1.InPlaceIfPossible, ptr.To(intstr.FromString("0%"))
	}, "", ""},
	"unknown in-place policy": {func(ds *daemonsetv1alpha1.DaemonSet) { rollingUpdate(ds).InPlace = "Always" },
		"spec.updateStrategy.rollingUpdate.inPlace: Unsupported value", "spec.updateStrategy.rollingUpdate.inPlace: Unsupported value"},
	"unknown in-place readiness gate policy": {func(ds *daemonsetv1alpha1.DaemonSet) { rollingUpdate(ds).InPlaceReadinessGate = "Off" },
		"spec.updateStrategy.rollingUpdate.inPlaceReadinessGate: Unsupported value",
		"spec.updateStrategy.rollingUpdate.inPlaceReadinessGate: Unsupported value"},
	"negative partition": {func(ds *daemonsetv1alpha1.DaemonSet) { rollingUpdate(ds).Partition = ptr.To[int32](-1) },
		"spec.updateStrategy.rollingUpdate.partition", "spec.updateStrategy.rollingUpdate.partition"},
	"negative minReadySeconds": {func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.MinReadySeconds = -1 },
		"spec.minReadySeconds", "spec.minReadySeconds"},
	"hostPort with surge": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}})
		ru := rollingUpdate(ds)
		ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	}, "spec.updateStrategy.rollingUpdate.maxSurge: Forbidden: must be 0 because container \"c\" port 9100 binds a hostPort", ""},
	"hostNetwork with surge": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 9100}}})
		ds.Spec.Template.Spec.HostNetwork = true
		ru := rollingUpdate(ds)
		ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromString("10%")), ptr.To(intstr.FromInt32(0))
	}, "spec.updateStrategy.rollingUpdate.maxSurge: Forbidden: must be 0 because spec.template.spec.hostNetwork is true",
		"spec.updateStrategy.rollingUpdate.maxSurge: Forbidden: must be 0 because spec.template.spec.hostNetwork is true"},
	"hostNetwork with a surge of 1": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Template.Spec.HostNetwork = true
		ru := rollingUpdate(ds)
		ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(0))
	}, "spec.updateStrategy.rollingUpdate.maxSurge: Forbidden: must be 0 because spec.template.spec.hostNetwork is true",
		"spec.updateStrategy.rollingUpdate.maxSurge: Forbidden: must be 0 because spec.template.spec.hostNetwork is true"},
	"hostNetwork without surge": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Template.Spec.HostNetwork = true
		ru := rollingUpdate(ds)
		ru.MaxSurge, ru.MaxUnavailable = ptr.To(intstr.FromString("0%")), ptr.To(intstr.FromInt32(1))
	}, "", ""},
	"template labels outside the selector": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
		ds.Spec.Template.Labels = map[string]string{"app": "b"}
	}, "spec.template.metadata.labels", "spec.template.metadata.labels: Invalid value"},
	"template labels outside the selector's expressions": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"agent"}}}}
		ds.Spec.Template.Labels = map[string]string{"app": "agnet"}
	}, "spec.template.metadata.labels", "spec.template.metadata.labels: Invalid value"},
	"template labels inside the selector's expressions": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"agent"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}},
			{Key: "team", Operator: metav1.LabelSelectorOpExists},
			{Key: "debug", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		ds.Spec.Template.Labels = map[string]string{"app": "agent", "team": "infra"}
	}, "", ""},
	"a selector on a label the controller overwrites": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/part-of": "myplatform"}}
		ds.Spec.Template.Labels = map[string]string{"app.kubernetes.io/part-of": "myplatform"}
	}, "spec.selector: Invalid value", "spec.selector: Invalid value"},
	"a selector on the revision hash": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "controller-revision-hash", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	}, "spec.selector: Invalid value", "spec.selector: Invalid value"},
	// What the apiserver refuses in a Pod, refused in the template with the DaemonSet (a server-side dry run).
	"invalid container name": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "Bad_Name", Image: "x"})
	}, "spec.template.spec.containers[0].name: Invalid value", ""},
	"volume mount naming no volume": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x",
			VolumeMounts: []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}})
	}, "spec.template.spec.containers[0].volumeMounts[0].name: Not found", ""},
	"requests above limits": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}})
	}, "spec.template.spec.containers[0].resources.requests: Invalid value", ""},
	"container without image": {func(ds *daemonsetv1alpha1.DaemonSet) {
		withContainer(ds, corev1.Container{Name: "c"})
	}, "spec.template.spec.containers[0].image: Required value", ""},
}

// Every invalid spec is rejected with its field path through the real apiserver: with the webhook, and with the
// CRD's CEL rules alone where CEL can express the rule. Where it cannot ("" in withoutWebhook), the object is
// admitted and the controller copes (it never surges a hostPort template; a selector mismatch is caught at
// update time by the immutable selector and the template labels the webhook checks).
func TestInvalidSpecsAreRejectedWithFieldPaths(t *testing.T) {
	serveWebhooks(t)
	cases := map[string]testenv.AdmissionCase{}
	for name, tc := range invalidDaemonSets {
		cases[name] = testenv.AdmissionCase{Mutate: func(o client.Object) { tc.mutate(o.(*daemonsetv1alpha1.DaemonSet)) },
			WithWebhook: tc.withWebhook, WithoutWebhook: tc.withoutWebhook}
	}
	pair.CheckAdmissions(t, func(name string) client.Object { return valid(name) }, cases)
}

func TestSelectorIsImmutable(t *testing.T) {
	serveWebhooks(t)
	for _, env := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		ctx := context.Background()
		ds := valid("immutable")
		ds.Namespace = namespace(t, env)
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
		ds.Spec.Template.Labels = map[string]string{"app": "a"}
		g.Expect(env.Client.Create(ctx, ds)).To(Succeed())
		ds.Spec.Selector.MatchLabels["app"] = "b"
		ds.Spec.Template.Labels["app"] = "b"
		err := env.Client.Update(ctx, ds)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.selector"))
		g.Expect(err.Error()).To(ContainSubstring("immutable"))
	}
}

// The webhook writes the defaults into the stored object: what the controller assumes is what the user sees.
func TestDefaultsAreStored(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ds := valid("seed")
	ds.Namespace = namespace(t, withWebhook)
	g.Expect(withWebhook.Client.Create(context.Background(), ds)).To(Succeed())
	var got daemonsetv1alpha1.DaemonSet
	g.Expect(withWebhook.Client.Get(context.Background(), client.ObjectKeyFromObject(ds), &got)).To(Succeed())
	g.Expect(got.Spec.Selector.MatchLabels).To(Equal(map[string]string{"daemonset.keelson.dev/name": "seed"}))
	g.Expect(got.Spec.Template.Labels).To(HaveKeyWithValue("daemonset.keelson.dev/name", "seed"))
	g.Expect(got.Spec.Template.Spec.Containers).To(HaveLen(1))
	g.Expect(got.Spec.Template.Spec.Containers[0].Name).To(Equal("app"))
	g.Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("agent:v1"))
	g.Expect(got.Spec.UpdateStrategy.Type).To(Equal(daemonsetv1alpha1.RollingUpdateStrategyType))
	g.Expect(got.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(got.Spec.UpdateStrategy.RollingUpdate.MaxSurge.IntValue()).To(Equal(0))
	g.Expect(*got.Spec.RevisionHistoryLimit).To(Equal(int32(10)))

	// Changing spec.image later moves the defaulted container along.
	got.Spec.Image = "agent:v2"
	g.Expect(withWebhook.Client.Update(context.Background(), &got)).To(Succeed())
	g.Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("agent:v2"))
}

// The samples in docs/samples are admitted as they are, with and without the webhook.
func TestSamplesAreValid(t *testing.T) {
	serveWebhooks(t)
	pair.CheckSamples(t, "daemonset-*.yaml", 2, func() client.Object { return &daemonsetv1alpha1.DaemonSet{} }, nil)
}

// A DaemonSet stored before the selector policy (or while it was not installed) keeps taking the writes that leave
// its spec alone: the garbage collector's finalizer patches (an orphan or foreground delete would hang otherwise),
// labels. A write of its spec is judged.
func TestTheSelectorPolicyJudgesOnlySpecWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := withoutWebhook
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	g.Expect(e.Client.Get(ctx, client.ObjectKey{Name: "keelson-daemonset-selector"}, &binding)).To(Succeed())
	stored := binding.DeepCopy()
	g.Expect(e.Client.Delete(ctx, &binding)).To(Succeed())
	restored := false
	restore := func() {
		if !restored {
			fresh := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: stored.Name}, Spec: stored.Spec}
			g.Expect(e.Client.Create(ctx, fresh)).To(Succeed())
			restored = true
		}
	}
	t.Cleanup(restore)
	ns := namespace(t, e)
	mismatched := func(name string) *daemonsetv1alpha1.DaemonSet {
		ds := valid(name)
		ds.Namespace = ns
		withContainer(ds, corev1.Container{Name: "c", Image: "x"})
		ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
		ds.Spec.Template.Labels = map[string]string{"app": "agnet"}
		return ds
	}
	old := mismatched("stored")
	g.Eventually(func() error { return e.Client.Create(ctx, old.DeepCopy()) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	restore()
	g.Eventually(func() error { return e.Client.Create(ctx, mismatched("new"), client.DryRunAll) }, 30*time.Second, 100*time.Millisecond).
		Should(MatchError(ContainSubstring("spec.template.metadata.labels")), "the policy is back")

	patch := func(body string) error {
		return e.Client.Patch(ctx, mismatched("stored"), client.RawPatch(types.MergePatchType, []byte(body)))
	}
	g.Expect(patch(`{"metadata":{"finalizers":["orphan"]}}`)).To(Succeed(), "an orphan delete's finalizer")
	g.Expect(patch(`{"metadata":{"finalizers":null,"labels":{"team":"infra"}}}`)).To(Succeed(), "a label")
	g.Expect(patch(`{"spec":{"minReadySeconds":5}}`)).To(MatchError(ContainSubstring("spec.template.metadata.labels")),
		"a spec write is judged")
}

// The helm test's probe reaches only the webhook (testenv.WebhookPair.CheckProbe).
func TestProbeReachesOnlyTheWebhook(t *testing.T) {
	serveWebhooks(t)
	pair.CheckProbe(t, webhook.Probe())
}
