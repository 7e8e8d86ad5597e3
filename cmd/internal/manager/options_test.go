package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	o := DefaultOptions("daemonset-controller")
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if o.LeaderElectionID != "daemonset-controller.keelson.dev" || !o.LeaderElect || !o.MetricsSecure {
		t.Fatalf("defaults lost their production values: %+v", o)
	}
}

func TestValidateNamesEveryBadFlag(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Options)
		want   []string
	}{
		"log level":    {func(o *Options) { o.LogLevel = "loud" }, []string{"--log-level"}},
		"log format":   {func(o *Options) { o.LogFormat = "xml" }, []string{"--log-format"}},
		"concurrency":  {func(o *Options) { o.Concurrency = 0 }, []string{"--concurrency"}},
		"qps":          {func(o *Options) { o.KubeAPIQPS = 0 }, []string{"--kube-api-qps"}},
		"webhook port": {func(o *Options) { o.WebhookPort = 70000 }, []string{"--webhook-port"}},
		"shutdown":     {func(o *Options) { o.GracefulShutdownTimeout = -time.Second }, []string{"--graceful-shutdown-timeout"}},
		"drain":        {func(o *Options) { o.WebhookDrain = -time.Second }, []string{"--webhook-drain-duration"}},
		"release":      {func(o *Options) { o.ReleaseFinalizersTimeout = 0 }, []string{"--release-finalizers-timeout"}},
		"admission check without the ready check": {func(o *Options) { o.CheckAdmissionNamespace = "probe" }, []string{"--check-admission-namespace"}},
		"renew >= lease": {func(o *Options) { o.RenewDeadline = o.LeaseDuration }, []string{"--leader-election-lease-duration"}},
		"retry too long": {func(o *Options) { o.RetryPeriod = o.RenewDeadline }, []string{"--leader-election-renew-deadline"}},
		"retry zero":     {func(o *Options) { o.RetryPeriod = 0 }, []string{"--leader-election-retry-period"}},
		"two at once": {func(o *Options) { o.LogFormat = "xml"; o.Concurrency = -1 },
			[]string{"--log-format", "--concurrency"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions("x")
			tc.mutate(&o)
			err := o.Validate()
			if err == nil {
				t.Fatal("Validate accepted invalid options")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestLeaseTimingsIgnoredWithoutLeaderElection(t *testing.T) {
	o := DefaultOptions("x")
	o.LeaderElect = false
	o.RetryPeriod = 0
	if err := o.Validate(); err != nil {
		t.Fatalf("lease timings checked with leader election off: %v", err)
	}
}

func TestBindFlagsParsesEveryFlag(t *testing.T) {
	o := DefaultOptions("x")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	err := fs.Parse([]string{
		"--metrics-bind-address=:9000", "--metrics-secure=false", "--health-probe-bind-address=:9001", "--pprof-bind-address=127.0.0.1:9002",
		"--leader-elect=false", "--leader-election-namespace=ops", "--leader-election-id=lease-x",
		"--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s",
		"--leader-election-retry-period=3s", "--enable-webhooks=false", "--webhook-port=9444",
		"--webhook-cert-dir=/certs", "--log-level=debug", "--log-format=console", "--concurrency=8",
		"--kube-api-qps=10", "--kube-api-burst=20", "--graceful-shutdown-timeout=5s", "--kubeconfig=/kc", "--webhook-drain-duration=2s",
		"--webhook-cert-rotation", "--webhook-cert-secret=s", "--webhook-service-name=svc",
		"--webhook-configuration-name=cfg", "--check-ready-url=http://x/readyz", "--check-admission-namespace=probe", "--check-admission-label=team=a",
		"--release-finalizers=ctl", "--release-finalizers-timeout=1m",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		MetricsAddr: ":9000", ProbeAddr: ":9001", PprofAddr: "127.0.0.1:9002", LeaderElectionNamespace: "ops", LeaderElectionID: "lease-x",
		LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 3 * time.Second,
		WebhookPort: 9444, WebhookCertDir: "/certs", WebhookCertRotation: true, WebhookCertSecret: "s",
		WebhookServiceName: "svc", WebhookConfigName: "cfg", CheckReadyURL: "http://x/readyz", CheckAdmissionNamespace: "probe", CheckAdmissionLabels: map[string]string{"team": "a"},
		ReleaseFinalizers: "ctl", ReleaseFinalizersTimeout: time.Minute,
		LogLevel: "debug", LogFormat: "console", Concurrency: 8,
		KubeAPIQPS: 10, KubeAPIBurst: 20, GracefulShutdownTimeout: 5 * time.Second, WebhookDrain: 2 * time.Second,
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("parsed options\n got %+v\nwant %+v", o, want)
	}
	if got := fs.Lookup("kubeconfig"); got == nil || got.Value.String() != "/kc" {
		t.Fatalf("--kubeconfig not registered or not parsed: %v", got)
	}
}

func TestParseLogLevel(t *testing.T) {
	for in, want := range map[string]zapcore.Level{"debug": zapcore.DebugLevel, "INFO": zapcore.InfoLevel,
		"": zapcore.InfoLevel, "error": zapcore.ErrorLevel, "0": zapcore.InfoLevel, "4": zapcore.Level(-4)} {
		got, err := parseLogLevel(in)
		if err != nil || got != want {
			t.Errorf("parseLogLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"trace", "-1", "128", "1.5"} {
		if _, err := parseLogLevel(in); err == nil {
			t.Errorf("parseLogLevel(%q) accepted an invalid level", in)
		}
	}
}

func TestNewLoggerFormats(t *testing.T) {
	var buf bytes.Buffer
	newLogger("info", "json", &buf).Info("Reconciled", "daemonset", "default/agent")
	newLogger("info", "json", &buf).V(1).Info("Hidden at info")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("json format did not write exactly one JSON line: %v\n%s", err, buf.String())
	}
	if line["msg"] != "Reconciled" || line["daemonset"] != "default/agent" || line["level"] != "info" {
		t.Fatalf("unexpected JSON log line: %v", line)
	}

	buf.Reset()
	newLogger("2", "console", &buf).V(2).Info("Shown at verbosity 2")
	if !strings.Contains(buf.String(), "Shown at verbosity 2") || strings.HasPrefix(buf.String(), "{") {
		t.Fatalf("console format at verbosity 2 wrote %q", buf.String())
	}
}

func TestResolveLeaseNamespace(t *testing.T) {
	noFile := func(string) ([]byte, error) { return nil, errors.New("not in a pod") }
	saFile := func(string) ([]byte, error) { return []byte("from-sa\n"), nil }
	env := func(v string) func(string) string { return func(string) string { return v } }

	for name, tc := range map[string]struct {
		flag     string
		getenv   func(string) string
		readFile func(string) ([]byte, error)
		want     string
	}{
		"flag wins":          {"from-flag", env("from-env"), saFile, "from-flag"},
		"POD_NAMESPACE next": {"", env("from-env"), saFile, "from-env"},
		"service account":    {"", env(""), saFile, "from-sa"},
	} {
		got, err := resolveLeaseNamespace(tc.flag, tc.getenv, tc.readFile)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, tc.want)
		}
	}
	if _, err := resolveLeaseNamespace("", env(""), noFile); err == nil ||
		!strings.Contains(err.Error(), "--leader-election-namespace") {
		t.Fatalf("out of cluster without a namespace: got %v, want an error naming the flag", err)
	}
}
