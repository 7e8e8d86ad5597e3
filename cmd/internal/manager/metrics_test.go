package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
	"github.com/keelson-dev/keelson/cmd/internal/webhookca/webhookcatest"
)

// A pass that cannot inject the CA counts a failure; a conflict with another replica's write does not. Only a pass
// that did everything moves the last success's time.
func TestCAInjectionFailuresCountRealFailuresOnly(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	data := certData(t, now, now, webhookcatest.DNSNames...)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Data: data}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a"}}}
	var refusal error
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret, vwc).
		WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if refusal != nil {
				return refusal
			}
			return c.Update(ctx, o, opts...)
		}}).Build()
	w := &webhookCerts{reader: c, writer: c, secret: types.NamespacedName{Namespace: "ns", Name: "tls"},
		configName: "hooks", caName: "ca", dnsNames: webhookcatest.DNSNames, fieldOwner: "test",
		serving: &webhookca.ServingCert{}, now: time.Now, log: logr.Discard()}
	// wipe empties the bundle again, so each pass has a write to make.
	wipe := func() {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
			t.Fatal(err)
		}
		vwc.Webhooks[0].ClientConfig.CABundle = nil
		refused := refusal
		refusal = nil
		if err := c.Update(ctx, vwc); err != nil {
			t.Fatal(err)
		}
		refusal = refused
	}
	for _, tc := range []struct {
		refusal error
		counted float64
	}{
		{nil, 0},
		{apierrors.NewConflict(schema.GroupResource{Resource: "validatingwebhookconfigurations"}, "hooks", errors.New("stale")), 0},
		{errors.New("forbidden by the test"), 1},
	} {
		wipe()
		refusal = tc.refusal
		before := testutil.ToFloat64(caInjectionFailures)
		caInjectionLastSuccess.Set(1)
		_, err := w.Reconcile(ctx, reconcile.Request{})
		if (err != nil) != (tc.refusal != nil) {
			t.Fatalf("refusal %v: pass returned %v", tc.refusal, err)
		}
		if got := testutil.ToFloat64(caInjectionFailures) - before; got != tc.counted {
			t.Errorf("refusal %v: counted %v failures, want %v", tc.refusal, got, tc.counted)
		}
		last := testutil.ToFloat64(caInjectionLastSuccess)
		if tc.refusal == nil && last < float64(now.Unix()) {
			t.Errorf("a successful pass left the last success at %v, want its time (%d or later)", last, now.Unix())
		}
		if tc.refusal != nil && last != 1 {
			t.Errorf("refusal %v: the last success moved to %v", tc.refusal, last)
		}
	}
}

// The expiry reported is the served certificate's: from memory in the own-CA mode, from the directory otherwise;
// nothing while there is none.
func TestCertificateExpiryIsTheServedCertificates(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	data := certData(t, now, now, webhookcatest.DNSNames...)
	pair, err := tls.X509KeyPair(data[webhookca.SecretCert], data[webhookca.SecretKey])
	if err != nil {
		t.Fatal(err)
	}
	want := func() string {
		return fmt.Sprintf(`
# HELP keelson_webhook_certificate_expiry_timestamp_seconds When the webhook serving certificate this process presents expires, in seconds since the Unix epoch.
# TYPE keelson_webhook_certificate_expiry_timestamp_seconds gauge
keelson_webhook_certificate_expiry_timestamp_seconds %d
`, pair.Leaf.NotAfter.Unix())
	}
	c := &certExpiryCollector{desc: certExpiry.desc}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d series before any certificate source", n)
	}

	serving := &webhookca.ServingCert{}
	c.set(servedCertificate(serving, true, ""))
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d series before a certificate is served", n)
	}
	serving.Set(&pair)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want())); err != nil {
		t.Errorf("own CA: %v", err)
	}

	dir := t.TempDir()
	c.set(servedCertificate(nil, false, dir))
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("%d series before the directory holds a certificate", n)
	}
	if err := os.WriteFile(filepath.Join(dir, webhookca.SecretCert), data[webhookca.SecretCert], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want())); err != nil {
		t.Errorf("certificate directory: %v", err)
	}
}

func TestMetricsCertificateChoices(t *testing.T) {
	opts := DefaultOptions("test")
	opts.MetricsWebhookCert, opts.MetricsCertDir = true, "/certs"
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-webhook-cert") {
		t.Fatalf("both certificate choices: %v", err)
	}
	serving := &webhookca.ServingCert{}
	opts.MetricsCertDir, opts.WebhookCertRotation = "", true
	if tlsOpts, dir := metricsTLSFromWebhook(serving, opts); len(tlsOpts) != 1 || dir != "" {
		t.Fatalf("own CA: %d TLS options and dir %q, want the in-memory certificate", len(tlsOpts), dir)
	}
	opts.WebhookCertRotation, opts.WebhookCertDir = false, "/webhook-certs"
	if tlsOpts, dir := metricsTLSFromWebhook(serving, opts); len(tlsOpts) != 0 || dir != "/webhook-certs" {
		t.Fatalf("mounted certificate: %d TLS options and dir %q, want the webhook's directory", len(tlsOpts), dir)
	}
}
