package pipeline

import (
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// validateReadiness checks a step's readiness: exactly one of httpGet and protocol, a path that starts with "/"
// and holds no whitespace (the kubelet would GET a URL that never answers), a port that is a port, and not
// together with a full readinessProbe (which one would the step use?).
func validateReadiness(fp *field.Path, s inferencev1alpha1.Step) field.ErrorList {
	r := s.Readiness
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if s.ReadinessProbe != nil {
		errs = append(errs, field.Forbidden(fp, "at most one of readiness and readinessProbe"))
	}
	switch {
	case r.HTTPGet != nil && r.Protocol != "":
		errs = append(errs, field.Invalid(fp, "httpGet and protocol", "exactly one of httpGet and protocol"))
	case r.HTTPGet == nil && r.Protocol == "":
		errs = append(errs, field.Required(fp, "exactly one of httpGet and protocol"))
	}
	if r.Protocol != "" && r.Protocol != inferencev1alpha1.ReadinessOpenInference {
		errs = append(errs, field.NotSupported(fp.Child("protocol"), r.Protocol, []string{string(inferencev1alpha1.ReadinessOpenInference)}))
	}
	if h := r.HTTPGet; h != nil {
		pp := fp.Child("httpGet", "path")
		switch {
		case !strings.HasPrefix(h.Path, "/"):
			errs = append(errs, field.Invalid(pp, h.Path, "must start with /"))
		case strings.IndexFunc(h.Path, unicode.IsSpace) >= 0:
			errs = append(errs, field.Invalid(pp, h.Path, "must not contain whitespace"))
		}
		if h.Port < 0 || h.Port > 65535 {
			errs = append(errs, field.Invalid(fp.Child("httpGet", "port"), h.Port, "must be a port number (0 or unset: the step's port)"))
		}
	}
	return errs
}
