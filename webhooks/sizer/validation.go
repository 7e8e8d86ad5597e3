package sizer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/webhooks/internal/validation"
)

// Default fills in defaults the CRD schema also has, so the stored object says what the controller does. Values
// the controller derives from others (the Service's target port follows its port) are left unset, so that they
// keep following.
func Default(w *sizerv1alpha1.WorkloadSizer) {
	s := &w.Spec
	if s.TargetRef != nil && s.TargetRef.APIVersion == "" {
		s.TargetRef.APIVersion = "apps/v1"
	}
	if s.UpdateMode == "" {
		s.UpdateMode = sizerv1alpha1.UpdateModeRolling
	}
	for i := range s.Resources {
		if s.Resources[i].ControlledValues == "" {
			s.Resources[i].ControlledValues = sizerv1alpha1.RequestsAndLimits
		}
	}
	if s.Runtime != nil && s.Runtime.MemoryHeadroomPercent == nil {
		s.Runtime.MemoryHeadroomPercent = ptr.To[int32](sizerv1alpha1.DefaultMemoryHeadroomPercent)
	}
	if s.Disruption != nil && s.Disruption.Profile == "" {
		s.Disruption.Profile = sizerv1alpha1.ProfileStateless
	}
	if s.Expose != nil && s.Expose.Service != nil {
		svc := s.Expose.Service
		if svc.Port == 0 {
			svc.Port = 80
		}
		if svc.Type == "" {
			svc.Type = corev1.ServiceTypeClusterIP
		}
	}
	if s.Expose != nil && s.Expose.Ingress != nil && s.Expose.Ingress.Path == "" {
		s.Expose.Ingress.Path = "/"
	}
}

// Validate returns every problem of a sizer's spec with its field path.
func Validate(w *sizerv1alpha1.WorkloadSizer) field.ErrorList {
	s := &w.Spec
	p := field.NewPath("spec")
	errs := validateTarget(s, p)
	errs = append(errs, validateTemplate(s, p)...)
	if s.Size != nil && *s.Size < 0 {
		errs = append(errs, field.Invalid(p.Child("size"), *s.Size, "must be non-negative"))
	}
	errs = append(errs, validateResources(s.Resources, p.Child("resources"))...)
	errs = append(errs, validateDisruption(s.Disruption, p.Child("disruption"))...)
	if e := s.Expose; e != nil && e.Ingress != nil && e.Ingress.Enabled && (e.Service == nil || !e.Service.Enabled) {
		errs = append(errs, field.Invalid(p.Child("expose", "ingress", "enabled"), true,
			"an Ingress needs the Service: set expose.service.enabled too"))
	}
	return errs
}

// validateTarget checks the target's reference.
func validateTarget(s *sizerv1alpha1.WorkloadSizerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref := s.TargetRef; ref != nil {
		if k := ref.Kind; k != "Deployment" && k != "StatefulSet" {
			errs = append(errs, field.NotSupported(p.Child("targetRef", "kind"), k, []string{"Deployment", "StatefulSet"}))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("targetRef", "name"), ""))
		}
	}
	return errs
}

// validateTemplate checks the template of a target the sizer creates: the apiserver would refuse the created target
// on every pass, so the sizer is refused once, here.
func validateTemplate(s *sizerv1alpha1.WorkloadSizerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Image != "" && s.Template != nil {
		errs = append(errs, field.Forbidden(p.Child("template"), "set image or template, not both"))
	}
	if s.Template == nil {
		return errs
	}
	if len(s.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("template", "spec", "containers"), "the created target needs a container"))
	}
	tp := p.Child("template", "spec")
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", s.Template.Spec.InitContainers}, {"containers", s.Template.Spec.Containers}} {
		for i, c := range list.containers {
			if c.Image == "" {
				errs = append(errs, field.Required(tp.Child(list.name).Index(i).Child("image"), "the created target's containers need images"))
			}
		}
	}
	return errs
}

// validateResources checks the resources entries: one per container, no request above its limit nor minimum above
// its maximum, no negative quantity.
func validateResources(resources []sizerv1alpha1.ContainerResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range resources {
		rp := p.Index(i)
		if seen[r.ContainerName] {
			errs = append(errs, field.Duplicate(rp.Child("containerName"), r.ContainerName))
		}
		seen[r.ContainerName] = true
		errs = append(errs, notAbove(r.Requests, r.Limits, rp.Child("requests"), "its limit")...)
		errs = append(errs, notAbove(r.MinAllowed, r.MaxAllowed, rp.Child("minAllowed"), "its maxAllowed")...)
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"requests", r.Requests}, {"limits", r.Limits}, {"minAllowed", r.MinAllowed}, {"maxAllowed", r.MaxAllowed}} {
			for name, q := range list.rl {
				if q.Sign() < 0 {
					errs = append(errs, field.Invalid(rp.Child(list.name).Key(string(name)), q.String(), "must be non-negative"))
				}
			}
		}
	}
	return errs
}

// validateDisruption checks the disruption budget: one of minAvailable and maxUnavailable, each a count or a
// percentage.
func validateDisruption(d *sizerv1alpha1.DisruptionSpec, dp *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if d.MinAvailable != nil && d.MaxUnavailable != nil {
		errs = append(errs, field.Forbidden(dp.Child("maxUnavailable"), "set minAvailable or maxUnavailable, not both"))
	}
	_, minErrs := validation.IntOrPercent(d.MinAvailable, dp.Child("minAvailable"))
	errs = append(errs, minErrs...)
	_, maxErrs := validation.IntOrPercent(d.MaxUnavailable, dp.Child("maxUnavailable"))
	return append(errs, maxErrs...)
}

// notAbove reports each quantity of low that exceeds the same resource in high.
func notAbove(low, high corev1.ResourceList, p *field.Path, what string) field.ErrorList {
	var errs field.ErrorList
	for name, q := range low {
		if h, ok := high[name]; ok && q.Cmp(h) > 0 {
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), fmt.Sprintf("must be at most %s (%s)", what, h.String())))
		}
	}
	return errs
}

// ValidateUpdate checks what may not change: the target (a sizer moved between workloads would leave the first
// one half-owned).
func ValidateUpdate(old, w *sizerv1alpha1.WorkloadSizer) field.ErrorList {
	before, after := old.Target(), w.Target()
	if (old.Spec.TargetRef == nil) != (w.Spec.TargetRef == nil) || before.Kind != after.Kind || before.Name != after.Name {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "targetRef"), w.Spec.TargetRef,
			"spec.targetRef is immutable: create a new WorkloadSizer for another workload")}
	}
	return nil
}

// ValidateUnique refuses a sizer for a workload another sizer of the namespace already sizes: two sizers would
// write the same fields in turn.
func ValidateUnique(w *sizerv1alpha1.WorkloadSizer, others []sizerv1alpha1.WorkloadSizer) field.ErrorList {
	ref := w.Target()
	for _, o := range others {
		t := o.Target()
		if o.UID == w.UID || o.Name == w.Name || o.DeletionTimestamp != nil || t.Kind != ref.Kind || t.Name != ref.Name {
			continue
		}
		return field.ErrorList{field.Duplicate(field.NewPath("spec", "targetRef"),
			fmt.Sprintf("%s %s is already sized by WorkloadSizer %s", ref.Kind, ref.Name, o.Name))}
	}
	return nil
}

// Warnings flags settings that are valid but probably not what the user wants.
func Warnings(w *sizerv1alpha1.WorkloadSizer) admission.Warnings {
	var out admission.Warnings
	if d := w.Spec.Disruption; d != nil && d.Profile == sizerv1alpha1.ProfileSingleInstance && !d.AllowBlockingDrains {
		out = append(out, "spec.disruption: the SingleInstance profile blocks node drains, so its budget is only "+
			"created with allowBlockingDrains: true")
	}
	return out
}
