package daemonset_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/fuzzinput"
	webhook "github.com/keelson-dev/keelson/webhooks/daemonset"
)

// fuzzSelector is nil, empty, or match labels and expressions with valid and invalid keys, values and operators.
func fuzzSelector(in *fuzzinput.Source) *metav1.LabelSelector {
	switch in.Intn(4) {
	case 0:
		return nil
	case 1:
		return &metav1.LabelSelector{}
	}
	sel := &metav1.LabelSelector{}
	for range in.Intn(3) {
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[in.Word("app", "daemonset.keelson.dev/name", "tier", "Bad Key")] = in.Word("agent", "a", "", "-bad")
	}
	for range in.Intn(3) {
		req := metav1.LabelSelectorRequirement{Key: in.Word("app", "tier", "zone"),
			Operator: metav1.LabelSelectorOperator(in.Word("In", "NotIn", "Exists", "DoesNotExist", "Gt"))}
		for range in.Intn(3) {
			req.Values = append(req.Values, in.Word("agent", "a", "b"))
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	return sel
}

// fuzzDaemonSet builds a DaemonSet of any shape the API admits as JSON: the image shorthand, containers with and
// without images and host ports, selectors and labels that match or not, every strategy knob in and out of range.
func fuzzDaemonSet(in *fuzzinput.Source) *daemonsetv1alpha1.DaemonSet {
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: in.Word("agent", "", "node-exporter")}}
	spec := &ds.Spec
	spec.Image = in.Pick("agent:v1", "", "agent:v2")
	for range in.Intn(3) {
		c := corev1.Container{Name: in.Word("app", "c", "sidecar", ""), Image: in.Pick("x", "", "agent:v1")}
		if in.Intn(3) == 0 {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: int32(in.Intn(2) * 9100)}}
		}
		if in.Bool() {
			spec.Template.Spec.InitContainers = append(spec.Template.Spec.InitContainers, c)
		} else {
			spec.Template.Spec.Containers = append(spec.Template.Spec.Containers, c)
		}
	}
	spec.Template.Spec.HostNetwork = in.Intn(4) == 0
	spec.Template.Spec.RestartPolicy = corev1.RestartPolicy(in.Pick("", "Always", "Never", "OnFailure"))
	if in.Bool() {
		spec.Template.Labels = map[string]string{in.Pick("app", "daemonset.keelson.dev/name"): in.Pick("agent", "a", "")}
	}
	spec.Selector = fuzzSelector(in)
	spec.UpdateStrategy.Type = daemonsetv1alpha1.DaemonSetUpdateStrategyType(in.Word("", "RollingUpdate", "OnDelete"))
	if in.Intn(3) != 0 {
		ru := &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: in.IntOrString(), MaxSurge: in.IntOrString(),
			Paused: in.Bool(), Selector: fuzzSelector(in)}
		if in.Bool() {
			p := int32(in.SmallInt(5))
			ru.Partition = &p
		}
		spec.UpdateStrategy.RollingUpdate = ru
	}
	spec.MinReadySeconds = int32(in.SmallInt(30))
	if in.Bool() {
		limit := int32(in.SmallInt(12))
		spec.RevisionHistoryLimit = &limit
	}
	return ds
}

// percentage is the rule the CRD's CEL applies to a string maxUnavailable or maxSurge.
var percentage = regexp.MustCompile(`^(100|[1-9]?[0-9])%$`)

// FuzzDaemonSetAdmission runs the defaulter and the validator on any DaemonSet, as creation and as an update, and
// checks: no panic; defaulting twice changes nothing more; refusals are Invalid errors with field paths under
// spec; the webhook refuses exactly the budgets the CRD's CEL refuses (a number below 0, a string that is not a
// percentage from 0% to 100%); and an admitted DaemonSet is one the controller can run: a selector matching its
// template, containers with images, budgets that resolve and are not both 0, no surge beside a host port.
func FuzzDaemonSetAdmission(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x01\x00\x00\x01\x01\x00\x00\x01\x00\x01\x01\x00\x01\x00\x03\x01\x02\x01\x02\x01\x00"))
	f.Add([]byte("\x01\x01\x02\x01\x02\x00\x01\x01\x00\x01\x01\x03\x00\x02\x03\x01\x02\x00\x02\x03\x02\x02\x00\x01\x02"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		ds := fuzzDaemonSet(in)
		old := fuzzDaemonSet(in)
		ctx := context.Background()

		defaulted := ds.DeepCopy()
		if err := (webhook.Defaulter{}).Default(ctx, defaulted); err != nil {
			t.Fatalf("Default: %v", err)
		}
		twice := defaulted.DeepCopy()
		webhook.Default(twice)
		if !apiequality.Semantic.DeepEqual(defaulted, twice) {
			t.Fatalf("defaulting again changed the object:\n%+v\n%+v", defaulted.Spec, twice.Spec)
		}

		errs := webhook.Validate(ds)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.") {
				t.Fatalf("error without a spec field path: %v", e)
			}
		}
		checkBudgetsAgreeWithCEL(t, ds, errs)

		_, err := (webhook.Validator{}).ValidateCreate(ctx, defaulted)
		if err != nil && !apierrors.IsInvalid(err) {
			t.Fatalf("refusal is not Invalid: %v", err)
		}
		if err == nil {
			checkRunnable(t, defaulted)
		}
		if _, err := (webhook.Validator{}).ValidateUpdate(ctx, old, defaulted); err != nil && !apierrors.IsInvalid(err) {
			t.Fatalf("update refusal is not Invalid: %v", err)
		}
		// An unchanged object stays writable (its finalizers removed, say) as long as it was admitted.
		if _, err := (webhook.Validator{}).ValidateCreate(ctx, defaulted); err == nil {
			if _, err := (webhook.Validator{}).ValidateUpdate(ctx, defaulted, defaulted.DeepCopy()); err != nil {
				t.Fatalf("an admitted DaemonSet cannot be written unchanged: %v", err)
			}
		}
	})
}

// checkBudgetsAgreeWithCEL compares the webhook's verdict on maxUnavailable and maxSurge with the CRD's rule.
func checkBudgetsAgreeWithCEL(t *testing.T, ds *daemonsetv1alpha1.DaemonSet, errs field.ErrorList) {
	t.Helper()
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		return
	}
	for name, v := range map[string]*intstr.IntOrString{"maxUnavailable": ru.MaxUnavailable, "maxSurge": ru.MaxSurge} {
		if v == nil {
			continue
		}
		path := "spec.updateStrategy.rollingUpdate." + name
		refused := false
		for _, e := range errs {
			refused = refused || (e.Field == path && e.Type == field.ErrorTypeInvalid && strings.Contains(e.Detail, "non-negative"))
		}
		celRefuses := (v.Type == intstr.Int && v.IntVal < 0) || (v.Type == intstr.String && !percentage.MatchString(v.StrVal))
		if refused != celRefuses {
			t.Fatalf("%s %q: the webhook refuses it: %v, the CRD's CEL: %v", path, v.String(), refused, celRefuses)
		}
	}
}

// checkRunnable checks what the controller relies on in an admitted, defaulted DaemonSet.
func checkRunnable(t *testing.T, ds *daemonsetv1alpha1.DaemonSet) {
	t.Helper()
	spec := &ds.Spec
	if len(spec.Template.Spec.Containers) == 0 {
		t.Fatal("admitted without containers")
	}
	for _, c := range spec.Template.Spec.Containers {
		if c.Image == "" {
			t.Fatalf("admitted container %q without an image", c.Name)
		}
	}
	if spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err != nil {
			t.Fatalf("admitted selector %v: %v", spec.Selector, err)
		}
		if !sel.Empty() && !sel.Matches(labels.Set(spec.Template.Labels)) {
			t.Fatalf("admitted selector %s that does not match the template's labels %v", sel, spec.Template.Labels)
		}
	} else if ds.Name != "" {
		t.Fatal("admitted without a selector")
	}
	ru := spec.UpdateStrategy.RollingUpdate
	if spec.UpdateStrategy.Type != daemonsetv1alpha1.RollingUpdateStrategyType || ru == nil {
		return
	}
	for _, desired := range []int{0, 1, 7, 1000} {
		u, errU := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		s, errS := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		if err := errors.Join(errU, errS); err != nil || u < 0 || s < 0 {
			t.Fatalf("admitted budgets %v and %v do not resolve for %d nodes: %v", ru.MaxUnavailable, ru.MaxSurge, desired, err)
		}
	}
	zero := func(v *intstr.IntOrString) bool { return v.String() == "0" || v.String() == "0%" }
	if zero(ru.MaxUnavailable) && zero(ru.MaxSurge) {
		t.Fatalf("admitted maxUnavailable %v and maxSurge %v", ru.MaxUnavailable, ru.MaxSurge)
	}
	if !zero(ru.MaxSurge) && (spec.Template.Spec.HostNetwork || hasHostPort(&spec.Template.Spec)) {
		t.Fatalf("admitted maxSurge %v beside a host port", ru.MaxSurge)
	}
}

func hasHostPort(spec *corev1.PodSpec) bool {
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				return true
			}
		}
	}
	return false
}
