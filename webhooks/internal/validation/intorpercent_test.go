package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Counts and percentages at and beyond their bounds: the refusal names the field; zero is told apart.
func TestIntOrPercent(t *testing.T) {
	p := field.NewPath("spec", "maxUnavailable")
	for _, tc := range []struct {
		v          *intstr.IntOrString
		zero, fail bool
	}{
		{nil, true, false},
		{ptr(intstr.FromInt32(0)), true, false},
		{ptr(intstr.FromInt32(3)), false, false},
		{ptr(intstr.FromInt32(-1)), false, true},
		{ptr(intstr.FromString("0%")), true, false},
		{ptr(intstr.FromString("100%")), false, false},
		{ptr(intstr.FromString("101%")), false, true},
		{ptr(intstr.FromString("05%")), false, true},
		{ptr(intstr.FromString("+5%")), false, true},
		{ptr(intstr.FromString("5")), false, true},
	} {
		zero, errs := IntOrPercent(tc.v, p)
		if zero != tc.zero || (len(errs) > 0) != tc.fail {
			t.Errorf("%v: zero %v, errors %v; want zero %v, failing %v", tc.v, zero, errs, tc.zero, tc.fail)
		}
		for _, e := range errs {
			if e.Field != p.String() {
				t.Errorf("%v: refused at %s, want %s", tc.v, e.Field, p)
			}
		}
	}
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }
