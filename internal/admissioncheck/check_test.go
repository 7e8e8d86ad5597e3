package admissioncheck

import (
	"errors"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	refused := errors.New(`admission webhook "vthing.keelson.dev" denied the request: spec.x: Invalid value: 1: must be odd`)
	unreachable := errors.New(`Internal error occurred: failed calling webhook "mthing.keelson.dev": no endpoints available`)
	for name, tc := range map[string]struct {
		valid, invalid error
		want           string // empty: passes
	}{
		"both answered as they should":    {nil, refused, ""},
		"webhook unreachable, Fail":       {unreachable, unreachable, "a valid object was refused"},
		"webhook unreachable, Ignore":     {nil, nil, "an object only the webhook refuses was admitted"},
		"refused by something else":       {nil, errors.New("forbidden: exceeded quota"), "not with the webhook's words"},
		"valid refused, invalid refused":  {refused, refused, "a valid object was refused"},
		"valid admitted, invalid with it": {nil, errors.New("must be odd"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := Judge(tc.valid, tc.invalid, "must be odd")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("failed: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
