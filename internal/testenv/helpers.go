package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunTests is a package's TestMain: it starts an Env with opts, hands it to set, runs the tests and stops it.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunTests(m, testenv.Options{…}, func(e *testenv.Env) { env = e })) }
//
// A fuzzing process (see Fuzzing) starts no control plane: fuzz targets test pure functions.
func RunTests(m *testing.M, opts Options, set func(*Env)) int {
	if Fuzzing() {
		return m.Run()
	}
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	set(env)
	return m.Run()
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

// Fuzzing reports whether this test process only fuzzes, so its TestMain need not boot a control plane: it is a
// fuzz worker (go test -fuzz runs the fuzz target in child processes, each of which runs TestMain again), or the
// fuzzing parent with no test selected (-run '^$' -fuzz …, as make fuzz runs it). Booting two apiservers per
// worker would cost seconds of every fuzzing budget and test nothing.
func Fuzzing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || (value("test.fuzz") != "" && value("test.run") == "^$")
}

// Namespace creates a namespace named after prefix for one test.
func (e *Env) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// StartCountedManager runs a manager whose every request is counted: writes at the HTTP transport (so events,
// subresources, applies and delete-collections all count, whatever client made them), creates and reconciles
// through the client setup registers the controller with. isReconciled says which object's Get marks a reconcile.
func (e *Env) StartCountedManager(t testing.TB, cacheOpts cache.Options, isReconciled func(client.Object) bool,
	setup func(mgr ctrl.Manager, c client.Client) error) (*Manager, *Counts) {
	t.Helper()
	counts := &Counts{}
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(counts.transport)
	mgr := e.StartManager(t, ManagerOptions{Cache: cacheOpts, Config: cfg, Setup: func(mgr ctrl.Manager) error {
		return setup(mgr, counts.client(mgr.GetClient(), isReconciled))
	}})
	return mgr, counts
}

// Warnings collects the warnings the apiserver sends back.
type Warnings struct {
	mu  sync.Mutex
	all []string
}

// HandleWarningHeaderWithContext records one warning.
func (w *Warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, text)
}

// All returns the warnings so far.
func (w *Warnings) All() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.all...)
}

// ClientWithWarnings is a client of the Env that records the apiserver's warnings.
func (e *Env) ClientWithWarnings(t testing.TB) (client.Client, *Warnings) {
	t.Helper()
	w := &Warnings{}
	cfg := *e.Config
	cfg.WarningHandlerWithContext = w
	c, err := client.New(&cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
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

// Events lists every event (events.k8s.io/v1) in namespace ns regarding the object of kind and name, as
// "Type Reason: Note"; a failed list is none.
func (e *Env) Events(ctx context.Context, ns, kind, name string) []string {
	var list eventsv1.EventList
	if err := e.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev.Type+" "+ev.Reason+": "+ev.Note)
		}
	}
	return out
}
