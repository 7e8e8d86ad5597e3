package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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

// RunWebhookTests is RunTests for admission tests: it starts a WebhookPair for the generated webhook manifest.
// Like RunTests, it starts nothing in a fuzzing process.
func RunWebhookTests(m *testing.M, opts Options, webhookManifest string, set func(*WebhookPair)) int {
	if Fuzzing() {
		return m.Run()
	}
	pair, err := StartWebhookPair(opts, webhookManifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = pair.Stop() }()
	set(pair)
	return m.Run()
}

// AdmissionCase is an object to submit to both control planes of a WebhookPair, and what each must answer: an
// Invalid error containing the text (a field path, say), or admission when the text is empty.
type AdmissionCase struct {
	Mutate         func(client.Object)
	WithWebhook    string
	WithoutWebhook string
}

// CheckAdmissions creates, for each case, valid() mutated by the case in both control planes (the webhooks must be
// served by a manager the test started) and checks each answer.
func (p *WebhookPair) CheckAdmissions(t *testing.T, valid func(name string) client.Object, cases map[string]AdmissionCase) {
	nsWith, nsWithout := p.With.Namespace(t, "admission"), p.Without.Namespace(t, "admission")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, side := range []struct {
				env   *Env
				ns    string
				want  string
				label string
			}{{p.With, nsWith, tc.WithWebhook, "with the webhook"}, {p.Without, nsWithout, tc.WithoutWebhook, "without the webhook"}} {
				obj := valid(objectName(name))
				obj.SetNamespace(side.ns)
				tc.Mutate(obj)
				err := side.env.Client.Create(context.Background(), obj)
				switch {
				case side.want == "" && err != nil:
					t.Errorf("%s: rejected, want admitted: %v", side.label, err)
				case side.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), side.want)):
					t.Errorf("%s: got %v, want an Invalid error containing %q", side.label, err, side.want)
				}
			}
		})
	}
}

// objectName turns a case name into an object name.
func objectName(caseName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(caseName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// CheckSamples creates every sample of docs/samples that pattern names (a glob: "daemonset-*.yaml"), decoded
// strictly into newObject's kind, in a fresh namespace of both control planes: a sample must be admitted as it is,
// with the webhook and without it. There must be at least atLeast of them; a file skip names (the workload a sample
// sizes, say) is not one.
func (p *WebhookPair) CheckSamples(t *testing.T, pattern string, atLeast int, newObject func() client.Object,
	skip func(file string) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.With.Root, "docs", "samples", pattern))
	if err != nil {
		t.Fatal(err)
	}
	if skip != nil {
		files = slices.DeleteFunc(files, skip)
	}
	if len(files) < atLeast {
		t.Fatalf("want %d samples or more of %s, found %v", atLeast, pattern, files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, env := range []*Env{p.With, p.Without} {
			obj := newObject()
			if err := yaml.UnmarshalStrict(b, obj); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			obj.SetNamespace(env.Namespace(t, "wh"))
			if err := env.Client.Create(context.Background(), obj); err != nil {
				t.Errorf("%s rejected: %v", filepath.Base(f), err)
			}
		}
	}
}
