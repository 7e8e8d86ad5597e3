// Package admissioncheck proves that the apiserver reaches a kind's admission webhooks and that the controller
// behind them answers: `helm test` runs it from each controller's image. It sends, as server-side dry runs (nothing
// is stored), an object every check admits and one that only the webhook refuses (the CRD's schema and CEL rules
// accept it). The first admitted says the mutating and validating webhooks answered (with failurePolicy Fail, an
// unreachable webhook refuses it); the second refused, with the webhook's own words, says the validating webhook ran
// the controller's code (with failurePolicy Ignore, an unreachable webhook admits it).
package admissioncheck

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Probe is what a kind's webhook package gives the check.
type Probe struct {
	// Valid returns an object of the kind that every check admits.
	Valid func() client.Object
	// Invalid returns an object of the kind that the schema and CEL rules admit and only the webhook refuses.
	Invalid func() client.Object
	// Refusal is a part of the webhook's message for Invalid.
	Refusal string
}

// probeName starts the names the apiserver gives the dry-run objects (generateName): nothing is stored, and a name
// of its own never meets a user's object.
const probeName = "keelson-admission-check-"

// Run sends p's two objects, labelled with labels (those a webhook's object selector asks for), to namespace ns
// through c as server-side dry runs and says whether the webhook answered both as it should. c needs create on the
// kind in ns.
func Run(ctx context.Context, c client.Client, ns string, labels map[string]string, p Probe) error {
	send := func(obj client.Object) error {
		obj.SetNamespace(ns)
		obj.SetName("")
		obj.SetGenerateName(probeName)
		if len(labels) > 0 {
			obj.SetLabels(labels)
		}
		return c.Create(ctx, obj, client.DryRunAll)
	}
	return Judge(send(p.Valid()), send(p.Invalid()), p.Refusal)
}

// Judge says what the answers to the valid and the invalid object mean.
func Judge(validErr, invalidErr error, refusal string) error {
	if validErr != nil {
		return fmt.Errorf("a valid object was refused, so writes of the kind fail (an unreachable webhook whose "+
			"failurePolicy is Fail refuses them all): %w", validErr)
	}
	if invalidErr == nil {
		return errors.New("an object only the webhook refuses was admitted: the apiserver did not call the " +
			"validating webhook (a namespace or object selector that leaves the test's objects out), or let the " +
			"call's failure through (failurePolicy Ignore)")
	}
	if !strings.Contains(invalidErr.Error(), refusal) {
		return fmt.Errorf("an invalid object was refused, but not with the webhook's words (%q): %w", refusal, invalidErr)
	}
	return nil
}
