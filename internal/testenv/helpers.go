package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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
