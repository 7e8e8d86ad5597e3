package pipeline

import (
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
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

// validateProbe checks a step's full readinessProbe as the apiserver checks a container's, which would otherwise
// refuse the step's Deployment on every pass: exactly one handler, a command for exec, ports that are ports (or
// port names), an HTTP scheme it knows, no negative timing, and no terminationGracePeriodSeconds (a readiness probe
// never kills).
func validateProbe(fp *field.Path, p *corev1.Probe) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	handlers := 0
	if e := p.Exec; e != nil {
		handlers++
		if len(e.Command) == 0 {
			errs = append(errs, field.Required(fp.Child("exec", "command"), ""))
		}
	}
	if h := p.HTTPGet; h != nil {
		handlers++
		errs = append(errs, validateProbePort(fp.Child("httpGet", "port"), h.Port)...)
		if h.Scheme != "" && h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(fp.Child("httpGet", "scheme"), h.Scheme, []string{"HTTP", "HTTPS"}))
		}
	}
	if s := p.TCPSocket; s != nil {
		handlers++
		errs = append(errs, validateProbePort(fp.Child("tcpSocket", "port"), s.Port)...)
	}
	if g := p.GRPC; g != nil {
		handlers++
		if g.Port < 1 || g.Port > 65535 {
			errs = append(errs, field.Invalid(fp.Child("grpc", "port"), g.Port, "must be between 1 and 65535"))
		}
	}
	switch {
	case handlers == 0:
		errs = append(errs, field.Required(fp, "one of exec, httpGet, tcpSocket and grpc"))
	case handlers > 1:
		errs = append(errs, field.Forbidden(fp, "only one of exec, httpGet, tcpSocket and grpc"))
	}
	for name, v := range map[string]int32{"initialDelaySeconds": p.InitialDelaySeconds, "timeoutSeconds": p.TimeoutSeconds,
		"periodSeconds": p.PeriodSeconds, "successThreshold": p.SuccessThreshold, "failureThreshold": p.FailureThreshold} {
		if v < 0 {
			errs = append(errs, field.Invalid(fp.Child(name), v, "must not be negative"))
		}
	}
	if p.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Forbidden(fp.Child("terminationGracePeriodSeconds"), "must not be set for a readiness probe"))
	}
	return errs
}

// validateProbePort checks a probe's port: a number from 1 to 65535, or a port name.
func validateProbePort(fp *field.Path, port intstr.IntOrString) field.ErrorList {
	if port.Type == intstr.String {
		if msgs := validation.IsValidPortName(port.StrVal); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(fp, port.StrVal, strings.Join(msgs, "; "))}
		}
		return nil
	}
	if port.IntVal < 1 || port.IntVal > 65535 {
		return field.ErrorList{field.Invalid(fp, port.IntVal, "must be between 1 and 65535")}
	}
	return nil
}
