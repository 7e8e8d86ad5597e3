package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// WebhookPair is two control planes for admission tests: With calls the webhooks of a generated webhook
// configuration (served by a manager the test starts with StartManager), Without has only the CRDs, as a cluster
// looks while the webhooks are down. A table of invalid objects runs against both.
type WebhookPair struct {
	With, Without *Env
}

// StartWebhookPair starts both control planes with opts; webhookManifests are the repository-relative paths of the
// generated webhook configurations the first one calls (one per binary whose webhooks the test serves).
func StartWebhookPair(opts Options, webhookManifests ...string) (*WebhookPair, error) {
	withOpts := opts
	withOpts.WebhookManifests = append(append([]string(nil), opts.WebhookManifests...), webhookManifests...)
	with, err := Start(withOpts)
	if err != nil {
		return nil, err
	}
	without, err := Start(opts)
	if err != nil {
		_ = with.Stop()
		return nil, err
	}
	return &WebhookPair{With: with, Without: without}, nil
}

// Stop stops both control planes.
func (p *WebhookPair) Stop() error {
	return errors.Join(p.With.Stop(), p.Without.Stop())
}

// Serve runs a manager that serves the webhooks setup registers, for the control plane that calls them, until the
// test ends.
func (p *WebhookPair) Serve(t testing.TB, setup func(ctrl.Manager) error) {
	t.Helper()
	p.With.StartManager(t, ManagerOptions{Setup: setup})
}

// CheckProbe runs a kind's helm test probe against both control planes (the webhooks must be served by a manager
// the test started): with the webhooks the valid object is admitted and the invalid one refused in the webhook's
// words; with the CRD alone the invalid one is admitted, so only the webhook refuses it.
func (p *WebhookPair) CheckProbe(t *testing.T, probe admissioncheck.Probe) {
	t.Helper()
	ctx := context.Background()
	if err := admissioncheck.Run(ctx, p.With.Client, p.With.Namespace(t, "probe"), nil, probe); err != nil {
		t.Fatalf("with the webhook: %v", err)
	}
	err := admissioncheck.Run(ctx, p.Without.Client, p.Without.Namespace(t, "probe"), map[string]string{"team": "a"}, probe)
	if err == nil || !strings.Contains(err.Error(), "was admitted") {
		t.Fatalf("without the webhook: got %v, want the invalid object admitted", err)
	}
}
