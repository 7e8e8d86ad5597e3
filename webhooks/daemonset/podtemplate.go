package daemonset

import (
	"context"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// dryRunTimeout bounds the pod template's dry run.
const dryRunTimeout = 3 * time.Second

// templatePath is where a DaemonSet holds its pod template.
var templatePath = field.NewPath("spec", "template")

// podOfTemplate is the pod a server-side dry run of the template creates: the template's metadata and spec, in the
// DaemonSet's namespace, under a generated name.
func podOfTemplate(ds *daemonsetv1alpha1.DaemonSet) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, GenerateName: "keelson-template-check-",
			Labels: t.Labels, Annotations: t.Annotations},
		Spec: t.Spec,
	}
}

// templateNeedsCheck says whether the template is new or changed: an update that leaves it as it was is not
// refused for it (a template an older apiserver admitted stays updatable).
func templateNeedsCheck(ds, old *daemonsetv1alpha1.DaemonSet) bool {
	return old == nil || !equality.Semantic.DeepEqual(ds.Spec.Template, old.Spec.Template)
}

// checkTemplate asks the apiserver whether it would admit the template as a Pod, with a server-side dry run that
// stores nothing, and returns its refusals field by field under spec.template: the apiserver's own validation of a
// pod (container names, volume mounts, resources, and whatever a newer apiserver adds), without this webhook
// copying it. Only a refusal of the pod as invalid counts: a Pod Security or quota refusal concerns the pods' future
// creation, not the DaemonSet, and an apiserver that cannot answer is no reason to refuse.
func checkTemplate(ctx context.Context, c client.Client, ds *daemonsetv1alpha1.DaemonSet) field.ErrorList {
	// Bounded well within the webhook's own timeout: the pod's admission may call other webhooks, and a slow one
	// must not make this webhook refuse the DaemonSet (the check is then skipped, as when the apiserver cannot
	// answer).
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	err := c.Create(ctx, podOfTemplate(ds), client.DryRunAll)
	if !apierrors.IsInvalid(err) {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(templatePath, field.OmitValueType{}, err.Error())}
	}
	return templateErrors(status.Status().Details.Causes)
}

// templateErrors turns the causes of a pod's refusal into errors under spec.template: "spec.containers[0].name"
// becomes "spec.template.spec.containers[0].name".
func templateErrors(causes []metav1.StatusCause) field.ErrorList {
	var errs field.ErrorList
	for _, c := range causes {
		path := templatePath.String()
		if c.Field != "" {
			path += "." + c.Field
		}
		t := field.ErrorType(c.Type)
		if t == "" {
			t = field.ErrorTypeInvalid
		}
		detail := strings.TrimPrefix(c.Message, t.String()+": ")
		errs = append(errs, &field.Error{Type: t, Field: path, BadValue: field.OmitValueType{}, Detail: detail})
	}
	return errs
}
