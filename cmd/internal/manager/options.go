package manager

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// Options are the process-level settings every Keelson binary shares. Each field has a command-line flag; the
// defaults are what a production install wants, so the chart only overrides what it must.
type Options struct {
	// MetricsAddr is where /metrics is served; "0" disables it.
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS behind Kubernetes authentication and authorization.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt/tls.key for the metrics server; empty means a self-signed certificate.
	MetricsCertDir string
	// MetricsWebhookCert serves metrics with the webhook server's certificate, which scrapers can verify against
	// the webhook CA (see metricsTLSFromWebhook).
	MetricsWebhookCert bool
	// ProbeAddr is where /healthz and /readyz are served.
	ProbeAddr string
	// PprofAddr is where Go's profiles (/debug/pprof/) are served, plain HTTP with no authentication; "" (the
	// default) serves none. Bind it to localhost and reach it with kubectl port-forward.
	PprofAddr string

	// LeaderElect turns on leader election; off only for single-replica debugging.
	LeaderElect bool
	// LeaderElectionNamespace is where the Lease lives; empty means the pod's own namespace.
	LeaderElectionNamespace string
	// LeaderElectionID is the Lease's name.
	LeaderElectionID string
	// LeaseDuration is how long followers wait before they may take over a lease that was not released.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it gives up leadership.
	RenewDeadline time.Duration
	// RetryPeriod is how often candidates try to acquire, and the leader renews, the lease.
	RetryPeriod time.Duration

	// EnableWebhooks serves this binary's admission webhooks (when it has any).
	EnableWebhooks bool
	// WebhookPort is the port the webhook server listens on.
	WebhookPort int
	// WebhookCertDir holds the webhook server's tls.crt and tls.key.
	WebhookCertDir string
	// WebhookCertRotation makes the process run its own CA: it keeps the serving certificate in a Secret of its
	// namespace, writes it to WebhookCertDir, and injects the CA into its webhook configurations.
	WebhookCertRotation bool
	// WebhookCertSecret is the Secret (in the pod's namespace) that holds the CA and serving certificate.
	WebhookCertSecret string
	// WebhookServiceName is the Service in front of the webhook server; the certificate is for its DNS names.
	WebhookServiceName string
	// WebhookConfigName names the validating and mutating webhook configurations the CA is injected into.
	WebhookConfigName string

	// CheckReadyURL, when set, makes the process GET that URL, exit 0 on a 2xx answer and 1 otherwise (the
	// chart's helm test uses it, so no other image is needed).
	CheckReadyURL string
	// CheckAdmissionNamespace, with CheckReadyURL, also sends the binary's admission probe to this namespace as
	// server-side dry runs: a valid object must be admitted and one only the webhook refuses must be refused (the
	// chart's helm test, proving the apiserver reaches the webhooks).
	CheckAdmissionNamespace string
	// CheckAdmissionLabels label the admission check's objects: those the webhooks' object selector asks for.
	CheckAdmissionLabels map[string]string
	// ReleaseFinalizers, when set, names the controller's Deployment in the pod's namespace: the process scales it
	// to zero, waits for its pods to go, removes the binary's finalizers from every object of its kinds and exits
	// (the chart's pre-delete hook, so an uninstall leaves no object that nobody will finalize).
	ReleaseFinalizers string
	// ReleaseFinalizersTimeout bounds the whole --release-finalizers run.
	ReleaseFinalizersTimeout time.Duration
	// ReleaseFinalizersReplicas is how many replicas a failed --release-finalizers run gives the Deployment back
	// when it found it at 0 (an earlier try stopped it and was killed before it could give them back).
	ReleaseFinalizersReplicas int
	// ReleaseFinalizersAlso names the other controllers' Deployments whose hooks run beside this one, as
	// name=replicas: a failed run gives each it finds at 0 its replicas back too, since their hooks may have
	// stopped them already, and an uninstall that stops leaves every controller running.
	ReleaseFinalizersAlso string

	// LogLevel is debug, info, error, or a number (higher is more verbose).
	LogLevel string
	// LogFormat is json (production) or console (development).
	LogFormat string

	// Concurrency is the number of objects each controller reconciles at once.
	Concurrency int
	// KubeAPIQPS and KubeAPIBurst bound the client's request rate to the apiserver.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// GracefulShutdownTimeout bounds how long the process waits for its workers after SIGTERM.
	GracefulShutdownTimeout time.Duration
	// WebhookDrain is how long the webhook server keeps answering after SIGTERM, while the replica's endpoint
	// leaves the Service; the lease is released without waiting for it.
	WebhookDrain time.Duration

	// ShowVersion prints the version and exits.
	ShowVersion bool
}

// DefaultOptions returns the production defaults for the binary called name.
//
// RetryPeriod is 1s rather than client-go's usual 2s: with LeaderElectionReleaseOnCancel a stopping leader frees the
// lease at once, and a follower notices at its next try, which client-go jitters between one and 2.2 RetryPeriods
// after the last, so this bounds a rolling update's handover at about two seconds. The price is one lease renewal
// per second.
func DefaultOptions(name string) Options {
	return Options{
		MetricsAddr:              ":8443",
		MetricsSecure:            true,
		ProbeAddr:                ":8081",
		LeaderElect:              true,
		LeaderElectionID:         name + ".keelson.dev",
		LeaseDuration:            15 * time.Second,
		RenewDeadline:            10 * time.Second,
		RetryPeriod:              1 * time.Second,
		EnableWebhooks:           true,
		WebhookPort:              9443,
		WebhookCertDir:           "/tmp/k8s-webhook-server/serving-certs",
		WebhookCertSecret:        name + "-webhook-tls",
		WebhookServiceName:       name,
		WebhookConfigName:        "keelson-" + name,
		LogLevel:                 "info",
		LogFormat:                "json",
		Concurrency:              4,
		KubeAPIQPS:               50,
		KubeAPIBurst:             100,
		GracefulShutdownTimeout:  30 * time.Second,
		WebhookDrain:             5 * time.Second,
		ReleaseFinalizersTimeout: 5 * time.Minute,
	}
}

// BindFlags registers every option on fs, with o's current values as defaults. It also registers controller-runtime's
// --kubeconfig flag, which config.GetConfig reads.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.bindServingFlags(fs)
	o.bindLeaderElectionFlags(fs)
	o.bindWebhookFlags(fs)
	o.bindHelmHookFlags(fs)
	o.bindRuntimeFlags(fs)
	config.RegisterFlags(fs)
}

// bindServingFlags registers where the process serves its metrics, probes and profiles.
func (o *Options) bindServingFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr,
		`Address the metrics endpoint binds to, e.g. ":8443"; "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve metrics over HTTPS and require a Kubernetes token allowed to GET /metrics.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"Directory with tls.crt and tls.key for the metrics server; empty uses a self-signed certificate.")
	fs.BoolVar(&o.MetricsWebhookCert, "metrics-webhook-cert", o.MetricsWebhookCert,
		"Serve metrics with the webhook server's certificate (the Service's DNS names, signed by the webhook CA), so "+
			"scrapers can verify it: from memory with --webhook-cert-rotation, else from --webhook-cert-dir. Ignored "+
			"without webhooks.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr,
		"Address /healthz and /readyz bind to.")

	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr,
		`Address Go's profiles (/debug/pprof/) are served on, e.g. "127.0.0.1:8082"; empty (the default) serves none. `+
			"Plain HTTP without authentication: bind it to localhost and use kubectl port-forward.")
}

// bindLeaderElectionFlags registers the leader election's lease and timings.
func (o *Options) bindLeaderElectionFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect one active replica through a Lease. Only turn off when exactly one replica runs.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader election Lease; default: the pod's namespace (POD_NAMESPACE or the service account's).")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration,
		"How long followers wait before taking over a lease its leader did not release (a crashed leader).")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline,
		"How long the leader retries renewing before it steps down; must be less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod,
		"How often candidates try to acquire and the leader renews the lease; bounds a graceful handover.")
}

// bindWebhookFlags registers the webhook server and its certificates.
func (o *Options) bindWebhookFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.EnableWebhooks, "enable-webhooks", o.EnableWebhooks, "Serve this controller's admission webhooks.")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port the admission webhook server listens on.")
	fs.DurationVar(&o.WebhookDrain, "webhook-drain-duration", o.WebhookDrain,
		"After SIGTERM, how long the webhook server keeps answering while this replica leaves the Service.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir,
		"Directory with the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&o.WebhookCertRotation, "webhook-cert-rotation", o.WebhookCertRotation,
		"Run an own CA: keep the serving certificate in --webhook-cert-secret, write it to --webhook-cert-dir and "+
			"inject the CA into --webhook-configuration-name. Off when certificates come from elsewhere (cert-manager).")
	fs.StringVar(&o.WebhookCertSecret, "webhook-cert-secret", o.WebhookCertSecret,
		"Secret in the pod's namespace holding the webhook CA and certificate (with --webhook-cert-rotation).")
	fs.StringVar(&o.WebhookServiceName, "webhook-service-name", o.WebhookServiceName,
		"Service in front of the webhook server: the certificate is issued for its DNS names.")
	fs.StringVar(&o.WebhookConfigName, "webhook-configuration-name", o.WebhookConfigName,
		"Name of the validating and mutating webhook configurations to inject the CA into.")
}

// bindHelmHookFlags registers the one-shot modes the chart's hooks run: helm test's checks and the uninstall hook's
// release of finalizers.
func (o *Options) bindHelmHookFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.CheckReadyURL, "check-ready-url", o.CheckReadyURL,
		"GET this URL and exit 0 if it answers 2xx, 1 otherwise; nothing else runs (for helm test).")
	fs.StringVar(&o.CheckAdmissionNamespace, "check-admission-namespace", o.CheckAdmissionNamespace,
		"With --check-ready-url: also dry-run a valid and an invalid object of the binary's kind in this namespace, and "+
			"fail unless the webhooks admit the first and refuse the second (for helm test).")
	fs.Func("check-admission-label", "key=value label of the admission check's objects, for a webhook object "+
		"selector (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", s)
		}
		if o.CheckAdmissionLabels == nil {
			o.CheckAdmissionLabels = map[string]string{}
		}
		o.CheckAdmissionLabels[k] = v
		return nil
	})
	fs.StringVar(&o.ReleaseFinalizers, "release-finalizers", o.ReleaseFinalizers,
		"Scale this Deployment (in POD_NAMESPACE) to 0, wait for its pods to go, remove this controller's finalizers "+
			"from every object of its kinds and exit; nothing else runs (for uninstall).")
	fs.DurationVar(&o.ReleaseFinalizersTimeout, "release-finalizers-timeout", o.ReleaseFinalizersTimeout,
		"How long --release-finalizers may take before it gives up.")
	fs.IntVar(&o.ReleaseFinalizersReplicas, "release-finalizers-replicas", o.ReleaseFinalizersReplicas,
		"Replicas a failed --release-finalizers run gives back to a Deployment it found at 0.")
	fs.StringVar(&o.ReleaseFinalizersAlso, "release-finalizers-also", o.ReleaseFinalizersAlso,
		"Other controllers' Deployments (name=replicas,...) a failed --release-finalizers run starts again when at 0.")
}

// bindRuntimeFlags registers logging, concurrency, the client budget, shutdown and --version.
func (o *Options) bindRuntimeFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info, error, or a verbosity number (2 = more).")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: json or console.")

	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "Objects each controller reconciles in parallel.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Steady requests per second to the apiserver.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Request burst allowed above kube-api-qps.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout,
		"After SIGTERM, how long to wait for running reconciles before exiting.")

	fs.BoolVar(&o.ShowVersion, "version", false, "Print the version and exit.")
}

// Validate reports every invalid option at once, each naming its flag.
func (o *Options) Validate() error {
	var errs []error
	if _, err := parseLogLevel(o.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if o.LogFormat != "json" && o.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format: %q is not json or console", o.LogFormat))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency: %d must be at least 1", o.Concurrency))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port: %d is not a TCP port", o.WebhookPort))
	}
	if o.GracefulShutdownTimeout < 0 {
		errs = append(errs, errors.New("--graceful-shutdown-timeout must not be negative"))
	}
	if o.ReleaseFinalizersTimeout <= 0 {
		errs = append(errs, errors.New("--release-finalizers-timeout must be positive"))
	}
	if o.CheckAdmissionNamespace != "" && o.CheckReadyURL == "" {
		errs = append(errs, errors.New("--check-admission-namespace needs --check-ready-url (the controller must be ready first)"))
	}
	if o.ReleaseFinalizersReplicas < 0 {
		errs = append(errs, errors.New("--release-finalizers-replicas must not be negative"))
	}
	if _, err := parseAlso(o.ReleaseFinalizersAlso); err != nil {
		errs = append(errs, fmt.Errorf("--release-finalizers-also: %w", err))
	}
	if o.MetricsWebhookCert && o.MetricsCertDir != "" {
		errs = append(errs, errMetricsCertConflict)
	}
	if o.WebhookDrain < 0 {
		errs = append(errs, errors.New("--webhook-drain-duration must not be negative"))
	}
	if o.LeaderElect {
		errs = append(errs, validateLeaseTimings(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)...)
	}
	return errors.Join(errs...)
}

// validateLeaseTimings applies client-go's rules for leader election timings, so a bad combination is reported at
// startup with the flag names instead of as a panic-free but confusing error from deep inside the elector.
func validateLeaseTimings(lease, renew, retry time.Duration) []error {
	var errs []error
	if retry <= 0 {
		errs = append(errs, errors.New("--leader-election-retry-period must be positive"))
	}
	if renew <= time.Duration(1.2*float64(retry)) {
		errs = append(errs, fmt.Errorf(
			"--leader-election-renew-deadline (%s) must be more than 1.2 x --leader-election-retry-period (%s)", renew, retry))
	}
	if lease <= renew {
		errs = append(errs, fmt.Errorf(
			"--leader-election-lease-duration (%s) must be more than --leader-election-renew-deadline (%s)", lease, renew))
	}
	return errs
}

// serviceAccountNamespaceFile is where Kubernetes mounts the pod's namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// resolveLeaseNamespace picks the Lease's namespace: the flag, else POD_NAMESPACE (set by the chart through the
// downward API), else the mounted service account's namespace. Out of cluster with none of them, it asks for the flag.
func resolveLeaseNamespace(flagValue string, getenv func(string) string, readFile func(string) ([]byte, error)) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	if b, err := readFile(serviceAccountNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	}
	return "", errors.New("--leader-election-namespace: not running in a pod and POD_NAMESPACE is unset; " +
		"pass --leader-election-namespace or --leader-elect=false")
}

// leaseNamespace resolves the Lease namespace from the real environment.
func (o *Options) leaseNamespace() (string, error) {
	return resolveLeaseNamespace(o.LeaderElectionNamespace, os.Getenv, os.ReadFile)
}

// podNamespace is the namespace the process runs in (POD_NAMESPACE or the service account's), where its
// certificate Secret lives.
func podNamespace() (string, error) {
	ns, err := resolveLeaseNamespace("", os.Getenv, os.ReadFile)
	if err != nil {
		return "", errors.New("--webhook-cert-rotation: not running in a pod and POD_NAMESPACE is unset")
	}
	return ns, nil
}

// errMetricsCertConflict is returned when both ways of choosing the metrics certificate are asked for.
var errMetricsCertConflict = errors.New("--metrics-webhook-cert and --metrics-cert-dir both choose the metrics certificate; pass one")

// parseAlso reads --release-finalizers-also: name=replicas pairs, comma-separated.
func parseAlso(value string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, pair := range strings.Split(value, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, count, ok := strings.Cut(pair, "=")
		n, err := strconv.ParseInt(count, 10, 32)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not name=replicas", pair)
		}
		out[name] = int32(n)
	}
	return out, nil
}
