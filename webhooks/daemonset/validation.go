package daemonset

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
	"github.com/keelson-dev/keelson/webhooks/internal/validation"
)

// Default fills in a DaemonSet's defaults: the selector (the name label) and the matching template label, the
// RollingUpdate strategy with maxUnavailable 1 and maxSurge 0, the revision history limit, and the template's
// container from the image shorthand. It is what the controller assumes for an object admitted without it.
func Default(ds *daemonsetv1alpha1.DaemonSet) {
	spec := &ds.Spec
	if spec.Image == "" && len(spec.Template.Spec.Containers) == 0 {
		return // nothing to run: leave the object as it came, so validation names the missing spec.image
	}
	// The name is empty when the object is created with generateName; the controller then applies the same
	// default selector at run time.
	if (spec.Selector == nil || (len(spec.Selector.MatchLabels) == 0 && len(spec.Selector.MatchExpressions) == 0)) && ds.Name != "" {
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{daemonsetv1alpha1.NameLabel: ds.Name}}
		if spec.Template.Labels == nil {
			spec.Template.Labels = map[string]string{}
		}
		spec.Template.Labels[daemonsetv1alpha1.NameLabel] = ds.Name
	}
	if len(spec.Template.Spec.Containers) == 0 && spec.Image != "" {
		spec.Template.Spec.Containers = []corev1.Container{{Name: daemonsetv1alpha1.DefaultContainerName, Image: spec.Image}}
	} else if spec.Image != "" && len(spec.Template.Spec.Containers) == 1 &&
		spec.Template.Spec.Containers[0].Name == daemonsetv1alpha1.DefaultContainerName {
		spec.Template.Spec.Containers[0].Image = spec.Image
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = daemonsetv1alpha1.RollingUpdateStrategyType
	}
	if spec.UpdateStrategy.Type == daemonsetv1alpha1.RollingUpdateStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{}
		}
		ru := spec.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
}

// Validate returns every problem of a DaemonSet's spec, each with its field path.
func Validate(ds *daemonsetv1alpha1.DaemonSet) field.ErrorList { return validate(ds, nil) }

// validate is Validate for a new DaemonSet (old nil) or a changed one. A change is not refused for a problem the
// stored object already had and still has unchanged (hostNetwork with surge, refused since after it was stored):
// the object must stay writable, to have its finalizers removed, say. The CRD's CEL rule ratchets the same way.
func validate(ds, old *daemonsetv1alpha1.DaemonSet) field.ErrorList {
	var errs field.ErrorList
	spec := &ds.Spec
	p := field.NewPath("spec")

	if spec.Image == "" && len(spec.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("image"), "set spec.image, or spec.template.spec.containers"))
	}
	// A lone "app" container may leave its image to spec.image (the shorthand); every other container needs one.
	shorthand := spec.Image != "" && len(spec.Template.Spec.Containers) == 1
	for i, c := range spec.Template.Spec.Containers {
		if c.Image == "" && (!shorthand || c.Name != daemonsetv1alpha1.DefaultContainerName) {
			errs = append(errs, field.Required(p.Child("template", "spec", "containers").Index(i).Child("image"), ""))
		}
	}
	if rp := spec.Template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("template", "spec", "restartPolicy"), rp, []string{string(corev1.RestartPolicyAlways)}))
	}
	errs = append(errs, validateSelector(ds, p)...)
	if spec.MinReadySeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("minReadySeconds"), spec.MinReadySeconds, "must be non-negative"))
	}
	if spec.RevisionHistoryLimit != nil && *spec.RevisionHistoryLimit < 0 {
		errs = append(errs, field.Invalid(p.Child("revisionHistoryLimit"), *spec.RevisionHistoryLimit, "must be non-negative"))
	}
	ratchetHostNetworkSurge := old != nil && hostNetworkSurge(&old.Spec) && hostNetworkSurge(spec) &&
		apiequality.Semantic.DeepEqual(old.Spec.UpdateStrategy.RollingUpdate.MaxSurge, spec.UpdateStrategy.RollingUpdate.MaxSurge)
	return append(errs, validateStrategy(spec, p.Child("updateStrategy"), ratchetHostNetworkSurge)...)
}

// hostNetworkSurge reports whether spec has a hostNetwork template and a maxSurge other than 0.
func hostNetworkSurge(spec *daemonsetv1alpha1.DaemonSetSpec) bool {
	ru := spec.UpdateStrategy.RollingUpdate
	if !spec.Template.Spec.HostNetwork || ru == nil || ru.MaxSurge == nil {
		return false
	}
	zero, errs := validation.IntOrPercent(ru.MaxSurge, field.NewPath("maxSurge"))
	return !zero && len(errs) == 0
}

func validateSelector(ds *daemonsetv1alpha1.DaemonSet, p *field.Path) field.ErrorList {
	if ds.Spec.Selector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("selector"), ds.Spec.Selector, err.Error())}
	}
	if !sel.Empty() && !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		return field.ErrorList{field.Invalid(p.Child("template", "metadata", "labels"), ds.Spec.Template.Labels,
			fmt.Sprintf("must match spec.selector %s, or the DaemonSet could not find its own pods", sel))}
	}
	// The controller gives every pod these labels over the template's: a selector must select them as it sets them.
	pod := maps.Clone(ds.Spec.Template.Labels)
	if pod == nil {
		pod = map[string]string{}
	}
	maps.Copy(pod, commonlabels.Set())
	pod[daemonsetv1alpha1.NameLabel] = ds.Name
	for _, hash := range []string{"a", "b"} {
		pod[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		if !sel.Empty() && !sel.Matches(labels.Set(pod)) {
			return field.ErrorList{field.Invalid(p.Child("selector"), ds.Spec.Selector, "selects on a label the "+
				"controller sets on every pod with another value (daemonset.keelson.dev/name is the DaemonSet's name, "+
				"app.kubernetes.io/managed-by and app.kubernetes.io/part-of are keelson, controller-revision-hash changes "+
				"with each revision): the DaemonSet would not select its own pods")}
		}
	}
	return nil
}

func validateStrategy(spec *daemonsetv1alpha1.DaemonSetSpec, p *field.Path, ratchetHostNetworkSurge bool) field.ErrorList {
	var errs field.ErrorList
	s := spec.UpdateStrategy
	switch s.Type {
	case "", daemonsetv1alpha1.RollingUpdateStrategyType:
	case daemonsetv1alpha1.OnDeleteStrategyType:
		if s.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p.Child("rollingUpdate"), "may only be set when type is RollingUpdate"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type,
			[]string{string(daemonsetv1alpha1.RollingUpdateStrategyType), string(daemonsetv1alpha1.OnDeleteStrategyType)}))
	}
	ru := s.RollingUpdate
	if ru == nil {
		return errs
	}
	rp := p.Child("rollingUpdate")
	unavailableZero, uErrs := validation.IntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))
	surgeZero, sErrs := validation.IntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))
	errs = append(append(errs, uErrs...), sErrs...)
	if unavailableZero && surgeZero && ru.MaxUnavailable != nil && ru.MaxSurge != nil {
		errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable.String(),
			"maxUnavailable and maxSurge cannot both be 0: the rollout could never replace a pod"))
	}
	if !surgeZero && ru.MaxSurge != nil {
		if port := firstHostPort(&spec.Template.Spec); port != "" {
			errs = append(errs, field.Forbidden(rp.Child("maxSurge"), fmt.Sprintf(
				"must be 0 because %s binds a hostPort: a surge pod starts beside the old pod on the same node and "+
					"cannot bind the port the old pod holds, so the rollout would wait forever; use maxUnavailable instead", port)))
		} else if spec.Template.Spec.HostNetwork && !ratchetHostNetworkSurge {
			errs = append(errs, field.Forbidden(rp.Child("maxSurge"),
				"must be 0 because spec.template.spec.hostNetwork is true: the pod's container ports are host ports, "+
					"a surge pod starts beside the old pod on the same node and cannot bind the ports the old pod "+
					"holds, so the rollout would wait forever; use maxUnavailable instead"))
		}
	}
	switch ru.InPlace {
	case "", daemonsetv1alpha1.InPlaceNever:
	case daemonsetv1alpha1.InPlaceIfPossible:
		if !surgeZero && ru.MaxSurge != nil {
			errs = append(errs, field.Forbidden(rp.Child("inPlace"), "IfPossible requires maxSurge 0: a pod updated in "+
				"place has no second pod beside it, so the update is paced by maxUnavailable"))
		}
	default:
		errs = append(errs, field.NotSupported(rp.Child("inPlace"), ru.InPlace,
			[]string{string(daemonsetv1alpha1.InPlaceIfPossible), string(daemonsetv1alpha1.InPlaceNever)}))
	}
	switch ru.InPlaceReadinessGate {
	case "", daemonsetv1alpha1.InPlaceReadinessGateEnabled, daemonsetv1alpha1.InPlaceReadinessGateDisabled:
	default:
		errs = append(errs, field.NotSupported(rp.Child("inPlaceReadinessGate"), ru.InPlaceReadinessGate,
			[]string{string(daemonsetv1alpha1.InPlaceReadinessGateEnabled), string(daemonsetv1alpha1.InPlaceReadinessGateDisabled)}))
	}
	if ru.Partition != nil && *ru.Partition < 0 {
		errs = append(errs, field.Invalid(rp.Child("partition"), *ru.Partition, "must be non-negative"))
	}
	if ru.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(ru.Selector); err != nil {
			errs = append(errs, field.Invalid(rp.Child("selector"), ru.Selector, err.Error()))
		}
	}
	return errs
}

// firstHostPort names the first container port that binds a host port, or "".
func firstHostPort(spec *corev1.PodSpec) string {
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				return fmt.Sprintf("container %q port %d", c.Name, port.HostPort)
			}
		}
	}
	return ""
}

// ValidateUpdate checks what may not change: the selector, once set.
func ValidateUpdate(old, ds *daemonsetv1alpha1.DaemonSet) field.ErrorList {
	if old.Spec.Selector != nil && !apiequality.Semantic.DeepEqual(old.Spec.Selector, ds.Spec.Selector) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), ds.Spec.Selector,
			"spec.selector is immutable: create a new DaemonSet to change it")}
	}
	return nil
}
