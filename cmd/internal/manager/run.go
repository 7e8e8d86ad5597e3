// Package manager is the process runtime shared by every Keelson binary: flags, logging, the controller-runtime
// manager with leader election, health and readiness probes, secure metrics, the webhook server and graceful
// shutdown. A binary's main.go only names itself and says what to register.
package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/keelson-dev/keelson/cmd/internal/version"
	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
)

// Exit codes of Run.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// Main runs the binary until SIGTERM or SIGINT and exits the process with Run's code.
func Main(b Binary) {
	os.Exit(Run(ctrl.SetupSignalHandler(), b, os.Args[1:], os.Stdout, os.Stderr))
}

// Run parses args, starts the manager and blocks until ctx is done or the manager fails. It returns the process
// exit code: 0 after a clean shutdown (or --help, --version), 2 for bad flags, 1 for any other failure.
func Run(ctx context.Context, b Binary, args []string, stdout, stderr io.Writer) int {
	opts := DefaultOptions(b.Name)
	fs := flag.NewFlagSet(b.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if opts.ShowVersion {
		_, _ = fmt.Fprintln(stdout, version.String(b.Name))
		return exitOK
	}
	if err := opts.Validate(); err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: invalid flags:\n%v\n", b.Name, err)
		return exitUsage
	}
	if opts.CheckReadyURL != "" {
		if err := checkReady(opts.CheckReadyURL); err != nil {
			_, _ = fmt.Fprintf(stderr, "%s: not ready: %v\n", b.Name, err)
			return exitError
		}
		_, _ = fmt.Fprintf(stdout, "%s: %s is ready\n", b.Name, opts.CheckReadyURL)
		if opts.CheckAdmissionNamespace == "" {
			return exitOK
		}
		if err := checkAdmission(ctx, b, opts.CheckAdmissionNamespace, opts.CheckAdmissionLabels); err != nil {
			_, _ = fmt.Fprintf(stderr, "%s: admission through the apiserver, in namespace %s: %v\n", b.Name, opts.CheckAdmissionNamespace, err)
			return exitError
		}
		_, _ = fmt.Fprintf(stdout, "%s: the apiserver reaches the webhooks: a valid object admitted, an invalid one refused (dry runs in %s)\n",
			b.Name, opts.CheckAdmissionNamespace)
		return exitOK
	}
	if opts.ReleaseFinalizers != "" {
		if err := releaseFinalizers(ctx, b, opts, stdout); err != nil {
			_, _ = fmt.Fprintf(stderr, "%s: releasing finalizers: %v\n", b.Name, err)
			return exitError
		}
		_, _ = fmt.Fprintf(stdout, "%s: finalizers released\n", b.Name)
		return exitOK
	}

	log := newLogger(opts.LogLevel, opts.LogFormat, stderr)
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	setupLog := log.WithName("setup")
	gcPercent := tuneGC()
	memoryLimit, err := tuneMemoryLimit(ctx)
	if err != nil {
		setupLog.Error(err, "Unable to set the Go memory limit from the container's; running without one")
	}

	if !awaitAPIServer(ctx, setupLog) {
		return exitOK
	}
	mgr, webhooks, err := newManager(b, opts)
	if err != nil {
		setupLog.Error(err, "Unable to set up the manager")
		return exitError
	}
	setupLog.Info("Starting", "binary", b.Name, "version", version.Version, "commit", version.GitCommit,
		"leaderElection", opts.LeaderElect, "webhooks", opts.EnableWebhooks && b.SetupWebhooks != nil, "gogc", gcPercent,
		"gomemlimit", memoryLimit)
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "Manager stopped with an error")
		return exitError
	}
	// The controllers have stopped and the lease is free; admission calls still routed here get answers.
	if webhooks.serving() {
		setupLog.Info("Draining the webhook server", "for", opts.WebhookDrain)
		drainCtx, cancel := context.WithTimeout(context.Background(), opts.WebhookDrain+opts.GracefulShutdownTimeout)
		defer cancel()
		if err := webhooks.wait(drainCtx); err != nil {
			setupLog.Error(err, "The webhook server did not stop")
			return exitError
		}
	}
	setupLog.Info("Stopped")
	return exitOK
}

// budget sets the process's client budget on cfg: --kube-api-qps and --kube-api-burst, as one token bucket that
// every client made from cfg shares. Without it each client controller-runtime makes, one per resource, would get a
// bucket of its own, and a controller writing Deployments, Services and its status would get the budget three times
// over (the workload-sizer's writes went at 86 a second under a budget of 50). The leader election lock, made from a
// copy, has a budget of its own (newFencedLock): a renewal never waits behind a burst of writes.
func budget(cfg *rest.Config, binary string, opts Options) {
	cfg.QPS = float32(opts.KubeAPIQPS)
	cfg.Burst = opts.KubeAPIBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	cfg.UserAgent = binary + "/" + version.Version
}

// newManager builds the controller-runtime manager for b from validated options and registers probes, webhooks,
// controllers and the leadership log line.
func newManager(b Binary, opts Options) (ctrl.Manager, *drainingServer, error) {
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	budget(cfg, b.Name, opts)

	scheme, err := newScheme(b)
	if err != nil {
		return nil, nil, err
	}
	leaseNamespace := ""
	if opts.LeaderElect {
		if leaseNamespace, err = opts.leaseNamespace(); err != nil {
			return nil, nil, err
		}
	}
	// Every write any client of this process sends is counted by verb and resource (keelson_apiserver_writes_total).
	cfg.Wrap(countWrites)
	lock, err := leaderElectionLock(cfg, scheme, leaseNamespace, opts)
	if err != nil {
		return nil, nil, err
	}

	serving := &webhookca.ServingCert{}
	var cacheOpts cache.Options
	if b.Cache != nil {
		cacheOpts = b.Cache(opts)
	}
	webhooks := webhookServer(b, opts, serving)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOptions(b, opts, serving),
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		// LeaderElectionID and LeaderElectionNamespace name the lock, which is made here (newFencedLock).
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &opts.LeaseDuration,
		RenewDeadline:                       &opts.RenewDeadline,
		RetryPeriod:                         &opts.RetryPeriod,
		GracefulShutdownTimeout:             &opts.GracefulShutdownTimeout,
		WebhookServer:                       webhooks,
		// Warmup starts every controller's informers on followers too: a new leader then starts reconciling at
		// once, instead of first listing every object it watches (on a thousand nodes, under load, that list took
		// the better part of a minute, during which nothing was reconciled). Followers hold the same caches as the
		// leader, so /readyz (caches synced) means ready to lead.
		Controller: ctrlconfig.Controller{MaxConcurrentReconciles: opts.Concurrency, EnableWarmup: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := register(mgr, b, opts, serving); err != nil {
		return nil, nil, err
	}
	if err := mgr.Add(leadershipLogger{lease: leaseNamespace + "/" + opts.LeaderElectionID}); err != nil {
		return nil, nil, fmt.Errorf("adding the leadership logger: %w", err)
	}
	return mgr, webhooks, nil
}

// newScheme registers the core types and the binary's API groups.
func newScheme(b Binary) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, b.AddToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("registering API types: %w", err)
		}
	}
	return scheme, nil
}

// leaderElectionLock is the leader election's lock (nil without leader election). The lock tells the write fence of
// each renewal; the fence, wrapped around cfg's transport, then guards every other client's writes.
func leaderElectionLock(cfg *rest.Config, scheme *runtime.Scheme, leaseNamespace string, opts Options) (resourcelock.Interface, error) {
	if !opts.LeaderElect {
		return nil, nil
	}
	writeFence := newFence(opts.RenewDeadline)
	lock, err := newFencedLock(cfg, scheme, leaseNamespace, opts.LeaderElectionID, opts.RenewDeadline, writeFence)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	cfg.Wrap(writeFence.wrap)
	return lock, nil
}

// metricsOptions serves metrics to a caller whose token may GET /metrics (a TokenReview and a SubjectAccessReview),
// over HTTPS when secure: with the webhook server's certificate when asked and there is one to lend, else the
// cert dir's or a self-signed one.
func metricsOptions(b Binary, opts Options, serving *webhookca.ServingCert) metricsserver.Options {
	metricsOpts := metricsserver.Options{BindAddress: opts.MetricsAddr, SecureServing: opts.MetricsSecure}
	if opts.MetricsSecure {
		metricsOpts.FilterProvider = metricsAuth
		metricsOpts.CertDir = opts.MetricsCertDir
		if opts.MetricsWebhookCert && opts.EnableWebhooks && b.SetupWebhooks != nil {
			metricsOpts.TLSOpts, metricsOpts.CertDir = metricsTLSFromWebhook(serving, opts)
		}
	}
	return metricsOpts
}

// webhookServer is the webhook server, kept serving through its drain. With the own CA the certificate is handed to
// it in memory, the moment it is issued; otherwise (say cert-manager's) it is read from the cert dir the Secret is
// mounted at.
func webhookServer(b Binary, opts Options, serving *webhookca.ServingCert) *drainingServer {
	serverOpts := webhook.Options{Port: opts.WebhookPort, CertDir: opts.WebhookCertDir}
	if opts.EnableWebhooks && b.SetupWebhooks != nil {
		certExpiry.set(servedCertificate(serving, opts.WebhookCertRotation, opts.WebhookCertDir))
	}
	if opts.WebhookCertRotation {
		serverOpts.TLSOpts = []func(*tls.Config){serving.TLSOption}
	}
	return newDrainingServer(webhook.NewServer(serverOpts), opts.WebhookDrain)
}

// register adds the probes, the webhooks, the metrics and the controllers of b to mgr.
func register(mgr ctrl.Manager, b Binary, opts Options, serving *webhookca.ServingCert) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr.GetCache())); err != nil {
		return fmt.Errorf("adding the cache readiness check: %w", err)
	}
	switch {
	case opts.EnableWebhooks && b.SetupWebhooks != nil && opts.WebhookCertRotation:
		if err := setupWebhooksWithRotation(mgr, b, opts, serving); err != nil {
			return err
		}
	case opts.EnableWebhooks && b.SetupWebhooks != nil:
		if err := b.SetupWebhooks(mgr); err != nil {
			return fmt.Errorf("registering webhooks: %w", err)
		}
		// Ready only once the webhook server serves, so the Service never routes admission calls to a replica
		// that would refuse them.
		if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("adding the webhook readiness check: %w", err)
		}
	}
	if b.RegisterMetrics != nil {
		if err := b.RegisterMetrics(mgr); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	if b.SetupControllers != nil {
		if err := b.SetupControllers(mgr, opts); err != nil {
			return fmt.Errorf("registering controllers: %w", err)
		}
	}
	return nil
}

// leadershipLogger is a runnable that runs only on the elected replica, so its one log line marks the moment this
// process became the leader (operators grep for it; the leader election test waits for it).
type leadershipLogger struct{ lease string }

var _ manager.LeaderElectionRunnable = leadershipLogger{}

// NeedLeaderElection makes the manager start the runnable only once this replica leads.
func (leadershipLogger) NeedLeaderElection() bool { return true }

// Start logs the acquisition and waits for shutdown.
func (l leadershipLogger) Start(ctx context.Context) error {
	ctrl.Log.WithName("leader-election").Info("Became the leader", "lease", l.lease)
	<-ctx.Done()
	return nil
}
