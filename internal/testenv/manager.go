package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ManagerOptions say what a test manager runs.
type ManagerOptions struct {
	// Cache narrows the informer cache as the binary would (label selectors per object).
	Cache cache.Options
	// Setup registers controllers and webhooks with the manager.
	Setup func(mgr ctrl.Manager) error
	// Config, when set, is the rest config the manager talks to the apiserver with (a counting transport, say);
	// the Env's own config otherwise.
	Config *rest.Config
}

// startTimeout bounds how long StartManager waits for the manager's caches to sync.
const startTimeout = 30 * time.Second

// Manager is a manager running inside a test.
type Manager struct {
	ctrl.Manager
	stop func()
}

// Stop stops the manager and waits until it has stopped (a controller restart in the middle of a test). It is
// safe to call more than once; the test's cleanup calls it too.
func (m *Manager) Stop() { m.stop() }

// StartManager runs a controller-runtime manager against the Env inside the test, serving the Env's webhooks, and
// returns once its caches have synced and its webhook server (if the Env has webhooks) listens. The manager stops, and the test waits for it, when the test ends.
// Leader election, metrics and probes are off: tests of those run the real binaries.
func (e *Env) StartManager(t testing.TB, opts ManagerOptions) *Manager {
	t.Helper()
	wh := e.env.WebhookInstallOptions
	skipNameValidation := true // tests start the same controller once per test in one process
	cfg := e.Config
	if opts.Config != nil {
		cfg = opts.Config
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Cache:                  opts.Cache,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
		Controller: config.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		t.Fatalf("creating the test manager: %v", err)
	}
	if opts.Setup != nil {
		if err := opts.Setup(mgr); err != nil {
			t.Fatalf("setting up the test manager: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("test manager stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, startTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatalf("test manager caches did not sync within %s", startTimeout)
	}
	if len(wh.MutatingWebhooks)+len(wh.ValidatingWebhooks) > 0 {
		// The apiserver calls the webhooks from the test's first write on: a write before the server listens
		// would be refused (connection refused), as if the webhook were down.
		started := mgr.GetWebhookServer().StartedChecker()
		if err := wait.PollUntilContextCancel(syncCtx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
			return started(nil) == nil, nil
		}); err != nil {
			t.Fatalf("test manager's webhook server did not listen within %s: %v", startTimeout, err)
		}
	}
	return &Manager{Manager: mgr, stop: stop}
}
