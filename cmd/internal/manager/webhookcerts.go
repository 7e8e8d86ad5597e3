package manager

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
)

// recheckEvery bounds how long a pass waits for its next run without any event: renewal is time-based, and a pass
// read from the cache that changes nothing costs no request.
const recheckEvery = time.Hour

// webhookCerts is the self-signed mode's one pass, run on every change of the certificate Secret or of either
// webhook configuration (each watched by name) and every recheckEvery: issue what the Secret lacks, put the CA
// into every CA bundle (the previous CA kept while valid), and serve the Secret's certificate once every bundle
// trusts it. Every replica runs it; replicas write the same content, and a stale write loses on its
// resourceVersion and is retried.
type webhookCerts struct {
	reader     client.Reader // the one-object cache: each read is of the object by name
	writer     client.Writer
	secret     types.NamespacedName
	configName string
	caName     string
	dnsNames   []string // the first is the name the certificate must verify for
	fieldOwner string
	serving    *webhookca.ServingCert
	now        func() time.Time
	log        logr.Logger
	// injected says a pass has brought both configurations' bundles up to date.
	injected atomic.Bool
}

// Reconcile runs the pass; the request is always the Secret.
func (w *webhookCerts) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := w.now()
	var secret corev1.Secret
	if err := w.reader.Get(ctx, w.secret, &secret); err != nil {
		countFailure(err)
		return reconcile.Result{}, fmt.Errorf("reading the certificate Secret %s: %w", w.secret, err)
	}
	if err := w.issue(ctx, &secret, now); err != nil {
		countFailure(err)
		return reconcile.Result{}, err
	}
	bundles, injectErr := w.inject(ctx, secret.Data[webhookca.SecretCACert], now)
	if injectErr == nil {
		w.injected.Store(true)
	}
	countFailure(injectErr)
	// Chosen from the bundles as they are, also when a write failed: a bundle that lacks the new CA keeps the old
	// certificate served.
	var candidate *tls.Certificate
	if pair, err := tls.X509KeyPair(secret.Data[webhookca.SecretCert], secret.Data[webhookca.SecretKey]); err == nil {
		candidate = &pair
	}
	current := w.serving.Get()
	switch chosen := webhookca.ChooseServing(current, candidate, bundles, now); {
	case chosen != current:
		w.serving.Set(chosen)
		w.log.Info("Serving the webhook certificate", "notAfter", chosen.Leaf.NotAfter, "issuer", chosen.Leaf.Issuer.CommonName)
	case candidate != nil && chosen != candidate:
		w.log.Info("Waiting for every CA bundle to trust the new certificate's CA")
	}
	if injectErr != nil {
		return reconcile.Result{}, injectErr
	}
	// The alert on a failing CA asks how long ago the last success was: a failure the retry mends is no alert.
	caInjectionLastSuccess.Set(float64(w.now().Unix()))
	return reconcile.Result{RequeueAfter: recheckEvery}, nil
}

// issue writes a new CA and serving certificate, or a new serving certificate, when the Secret needs them; secret
// then holds what was written.
func (w *webhookCerts) issue(ctx context.Context, secret *corev1.Secret, now time.Time) error {
	plan := webhookca.PlanIssue(secret.Data, w.dnsNames[0], now)
	if !plan.NewCA && !plan.NewServing {
		return nil
	}
	data, err := webhookca.Issue(secret.Data, plan, w.caName, w.dnsNames, now)
	if err != nil {
		return err
	}
	updated := secret.DeepCopy()
	updated.Data = data
	if err := w.writer.Update(ctx, updated, client.FieldOwner(w.fieldOwner)); err != nil {
		// A conflict is another replica's issue, or a cache behind this replica's own: the next pass reads it.
		return fmt.Errorf("writing the certificate Secret %s: %w", w.secret, err)
	}
	w.log.Info("Issued the webhook certificate", "newCA", plan.NewCA, "secret", w.secret)
	*secret = *updated
	return nil
}

// inject brings each webhook of both configurations to the merged bundle, and returns every webhook's bundle as it
// now stands (the written one, or the live one when the write failed). A configuration that does not exist has no
// bundles.
func (w *webhookCerts) inject(ctx context.Context, ca []byte, now time.Time) ([][]byte, error) {
	if len(ca) == 0 {
		return nil, errors.New("the certificate Secret has no CA")
	}
	key := types.NamespacedName{Name: w.configName}
	var bundles [][]byte
	var errs []error
	for _, live := range []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{},
		&admissionregistrationv1.MutatingWebhookConfiguration{}} {
		if err := w.reader.Get(ctx, key, live); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("reading %T %s: %w", live, w.configName, err))
			continue
		}
		updated := live.DeepCopyObject().(client.Object)
		setBundles(updated, func(b []byte) []byte { return webhookca.MergeBundle(ca, b, now) })
		bundles = append(bundles, caBundles(w.write(ctx, live, updated, &errs))...)
	}
	return bundles, errors.Join(errs...)
}

// write updates live to updated when their bundles differ, and returns what the configuration now holds: updated
// once written, else live (a failed write is added to errs).
func (w *webhookCerts) write(ctx context.Context, live, updated client.Object, errs *[]error) client.Object {
	if bundlesEqual(live, updated) {
		return live
	}
	if err := w.writer.Update(ctx, updated, client.FieldOwner(w.fieldOwner)); err != nil {
		*errs = append(*errs, fmt.Errorf("injecting the CA into %T %s: %w", live, live.GetName(), err))
		return live
	}
	return updated
}

// bundlesEqual reports whether two versions of a webhook configuration carry the same CA bundles.
func bundlesEqual(a, b client.Object) bool {
	return bytes.Equal(bytes.Join(caBundles(a), []byte{0}), bytes.Join(caBundles(b), []byte{0}))
}

// setBundles replaces each webhook's CA bundle of a webhook configuration with f of it.
func setBundles(o client.Object, f func([]byte) []byte) {
	switch c := o.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = f(c.Webhooks[i].ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig.CABundle = f(c.Webhooks[i].ClientConfig.CABundle)
		}
	}
}

// caBundles lists a webhook configuration's CA bundles in webhook order.
func caBundles(o client.Object) [][]byte {
	var out [][]byte
	switch c := o.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, h := range c.Webhooks {
			out = append(out, h.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, h := range c.Webhooks {
			out = append(out, h.ClientConfig.CABundle)
		}
	}
	return out
}

// countFailure counts a failed pass in keelson_webhook_ca_injection_failures_total. A conflict is not a failure:
// replicas write the same content, and the one that loses on the resourceVersion reads the winner's next pass.
func countFailure(err error) {
	if err != nil && !onlyConflicts(err) {
		caInjectionFailures.Inc()
	}
}

// onlyConflicts reports whether err is a conflict, or joins only conflicts.
func onlyConflicts(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyConflicts(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return apierrors.IsConflict(err)
}
