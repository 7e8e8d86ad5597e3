package manager

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/keelson-dev/keelson/cmd/internal/version"
	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
)

// The shared runtime's own metrics. They follow the controllers' scheme (controllers/internal/metrics): keelson_
// first, labels from small fixed sets. docs/operations.md lists them.
var (
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "keelson_build_info",
		Help: "Always 1; the labels say which version of the binary runs.",
	}, []string{"version", "commit"})

	caInjectionFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "keelson_webhook_ca_injection_failures_total",
		Help: "Passes of the own-CA mode that failed to issue the webhook certificate or to inject the CA bundle into the webhook configurations.",
	})

	caInjectionLastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "keelson_webhook_ca_injection_last_success_timestamp_seconds",
		Help: "When a pass of the own-CA mode last issued what was due and injected the CA bundle, in seconds since the Unix epoch (0 before the first).",
	})

	certExpiry = &certExpiryCollector{desc: prometheus.NewDesc("keelson_webhook_certificate_expiry_timestamp_seconds",
		"When the webhook serving certificate this process presents expires, in seconds since the Unix epoch.", nil, nil)}
)

func init() {
	crmetrics.Registry.MustRegister(buildInfo, caInjectionFailures, caInjectionLastSuccess, certExpiry, apiWrites, admissionErrors)
	buildInfo.WithLabelValues(version.Version, version.GitCommit).Set(1)
}

// certExpiryCollector reports the NotAfter of the webhook certificate this process serves, read at scrape time
// from where the webhook server reads it: memory in the own-CA mode, the certificate directory otherwise (a
// cert-manager Secret the kubelet keeps up to date). Reading the served certificate, not the Secret, is what says
// whether the apiserver's next call will succeed.
type certExpiryCollector struct {
	desc *prometheus.Desc
	// current returns the served certificate; nil (before the webhook server is set up, or without webhooks)
	// reports nothing.
	current atomic.Pointer[func() (*x509.Certificate, error)]
}

// set makes the collector read the certificate from f.
func (c *certExpiryCollector) set(f func() (*x509.Certificate, error)) { c.current.Store(&f) }

// Describe sends the one description.
func (c *certExpiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reports the served certificate's expiry, or nothing while there is none.
func (c *certExpiryCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.current.Load()
	if f == nil {
		return
	}
	cert, err := (*f)()
	if err != nil || cert == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(cert.NotAfter.Unix()))
}

// servedCertificate returns what the webhook server presents: with the own CA, the certificate in memory; else the
// first certificate of tls.crt in certDir.
func servedCertificate(serving *webhookca.ServingCert, rotation bool, certDir string) func() (*x509.Certificate, error) {
	if rotation {
		return func() (*x509.Certificate, error) {
			if c := serving.Get(); c != nil {
				return c.Leaf, nil
			}
			return nil, nil
		}
	}
	return func() (*x509.Certificate, error) {
		return readCertificate(filepath.Join(certDir, webhookca.SecretCert))
	}
}

// readCertificate parses the first certificate of a PEM file.
func readCertificate(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the operator's own certificate directory
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

// metricsTLSFromWebhook makes the metrics server present the webhook server's certificate: issued for the
// Service's DNS names by the webhook CA, it is one a scraper can verify (the chart's ServiceMonitor checks it
// against the CA and the Service's name), where controller-runtime's default is a self-signed certificate for
// localhost nobody can. With the own CA the certificate comes from memory, the moment it is issued; otherwise from
// the webhook certificate directory, which controller-runtime watches for renewals.
func metricsTLSFromWebhook(serving *webhookca.ServingCert, opts Options) (tlsOpts []func(*tls.Config), certDir string) {
	if opts.WebhookCertRotation {
		return []func(*tls.Config){serving.TLSOption}, ""
	}
	return nil, opts.WebhookCertDir
}
