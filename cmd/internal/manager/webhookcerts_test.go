package manager

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
	"github.com/keelson-dev/keelson/cmd/internal/webhookca/webhookcatest"
)

// liveBundles reads every bundle of the webhook configurations named hooks.
func liveBundles(t *testing.T, c client.Reader) [][]byte {
	t.Helper()
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(context.Background(), types.NamespacedName{Name: "hooks"}, &v); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), types.NamespacedName{Name: "hooks"}, &m); err != nil {
		t.Fatal(err)
	}
	return append(caBundles(&v), caBundles(&m)...)
}

// A CA rotation writes a certificate of the new CA into the Secret before the new CA is in every bundle. The pass
// keeps serving the old certificate until every webhook's bundle trusts the new CA, here while the mutating
// configuration refuses the write that adds it, and switches in the pass after it is let through.
func TestCARotationServesTheNewCAOnlyOnceEveryBundleTrustsIt(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	// A CA with 100 days left: valid now, replaced 20 days on (webhookca.RenewBefore is 90 days).
	old := certData(t, t0.Add(-webhookca.CAValidity+100*day), t0, webhookcatest.DNSNames...)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Data: old}
	hook := func(name string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: &name, CABundle: old[webhookca.SecretCACert]}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a", ClientConfig: hook("a")}, {Name: "b", ClientConfig: hook("b")}}}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m", ClientConfig: hook("m")}}}
	refuseMutating := true
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(secret, vwc, mwc).
		WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if _, ok := o.(*admissionregistrationv1.MutatingWebhookConfiguration); ok && refuseMutating {
				return errors.New("refused by the test")
			}
			return c.Update(ctx, o, opts...)
		}}).Build()
	now := t0
	w := &webhookCerts{reader: c, writer: c, secret: types.NamespacedName{Namespace: "ns", Name: "tls"},
		configName: "hooks", caName: "new-ca", dnsNames: webhookcatest.DNSNames, fieldOwner: "test",
		serving: &webhookca.ServingCert{}, now: func() time.Time { return now }, log: logr.Discard()}
	pass := func() error { _, err := w.Reconcile(ctx, reconcile.Request{}); return err }

	// servedIssuer is the served certificate's CA, after checking that every live bundle trusts it.
	servedIssuer := func() string {
		t.Helper()
		served := w.serving.Get()
		if served == nil {
			t.Fatal("nothing is served")
		}
		if !webhookca.TrustedByAll(served.Leaf, liveBundles(t, c), now) {
			t.Fatalf("serving a certificate of %s, which a CA bundle does not trust", served.Leaf.Issuer.CommonName)
		}
		return served.Leaf.Issuer.CommonName
	}

	// The mutating configuration's bundle already holds the old CA: nothing to write, so the refusal does not bite.
	if err := pass(); err != nil {
		t.Fatal(err)
	}
	if got := servedIssuer(); got != "test-ca" {
		t.Fatalf("serving a certificate of %s, want the one in the Secret", got)
	}

	now = t0.Add(20 * day)
	for range 2 { // the retry of a failed pass changes nothing either
		if err := pass(); err == nil {
			t.Fatal("the refused injection was not reported")
		}
		if err := c.Get(ctx, w.secret, secret); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(secret.Data[webhookca.SecretCACert], old[webhookca.SecretCACert]) {
			t.Fatal("the CA was not rotated")
		}
		if got := servedIssuer(); got != "test-ca" {
			t.Fatalf("serving a certificate of %s while the mutating bundle lacks that CA", got)
		}
	}

	refuseMutating = false
	if err := pass(); err != nil {
		t.Fatal(err)
	}
	if got := servedIssuer(); got != "new-ca" {
		t.Fatalf("serving a certificate of %s once every bundle trusts the new CA, want new-ca", got)
	}
	for i, b := range liveBundles(t, c) {
		if got := webhookcatest.CANames(t, b); len(got) != 2 || got[0] != "new-ca" || got[1] != "test-ca" {
			t.Errorf("bundle %d holds %v, want the new CA and the old", i, got)
		}
	}
}
