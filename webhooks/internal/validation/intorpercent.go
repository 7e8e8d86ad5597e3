// Package validation holds the checks the three kinds' webhooks share.
package validation

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// percentage is the CRDs' own rule for a count given as a percentage (their CEL uses the same expression), so the
// two layers refuse the same values: "+5%" and "05%" included, which a number parser would take.
var percentage = regexp.MustCompile(`^(100|[1-9]?[0-9])%$`)

// IntOrPercent checks a non-negative integer or a percentage from 0% to 100% (a rollout's maxUnavailable and
// maxSurge, a disruption budget's minAvailable and maxUnavailable), and reports whether it is 0. Unset is 0.
func IntOrPercent(v *intstr.IntOrString, p *field.Path) (zero bool, errs field.ErrorList) {
	if v == nil {
		return true, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return false, field.ErrorList{field.Invalid(p, v.IntVal, "must be non-negative")}
		}
		return v.IntVal == 0, nil
	}
	if !percentage.MatchString(v.StrVal) {
		return false, field.ErrorList{field.Invalid(p, v.StrVal, "must be a non-negative integer or a percentage from 0% to 100%")}
	}
	return v.StrVal == "0%", nil
}
