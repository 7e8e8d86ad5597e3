package manager

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxBundleCAs bounds the CA bundle: the current CA and the ones before it that are still valid.
const maxBundleCAs = 3

// mergeBundle returns the CA bundle to inject: the current CA first, then each certificate of the existing bundle
// that is still valid at now and is not the current one. Keeping the previous CA while it is valid is the overlap
// that makes a CA rotation safe: a replica still serving a certificate the previous CA signed (its mounted Secret is
// refreshed by the kubelet a minute or so later) stays trusted.
func mergeBundle(current, existing []byte, now time.Time) []byte {
	out := bytes.TrimSpace(current)
	out = append(out, '\n')
	kept := 1
	rest := existing
	for kept < maxBundleCAs {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil || now.After(cert.NotAfter) || bytes.Contains(current, pem.EncodeToMemory(block)) {
			continue
		}
		out = append(out, pem.EncodeToMemory(block)...)
		kept++
	}
	return out
}

// caInjector keeps the webhook configurations' CA bundles in line with the CA in the certificate Secret, with the
// previous CA kept while it is valid. It checks every interval and writes only when a bundle changes.
type caInjector struct {
	reader     client.Reader // uncached: reads are rare and the Secret is in one namespace only
	writer     client.Client
	secret     types.NamespacedName
	configName string
	interval   time.Duration
	injected   atomic.Bool
}

// NeedLeaderElection is false: any replica may keep the bundles right (they write the same content).
func (*caInjector) NeedLeaderElection() bool { return false }

// Start injects now and every interval until ctx ends.
func (c *caInjector) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("ca-injector")
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.inject(ctx, time.Now()); err != nil {
			log.Error(err, "Injecting the webhook CA bundle failed; retrying", "in", c.interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (c *caInjector) inject(ctx context.Context, now time.Time) error {
	var secret corev1.Secret
	if err := c.reader.Get(ctx, c.secret, &secret); err != nil {
		return fmt.Errorf("reading the certificate Secret: %w", err)
	}
	ca := secret.Data["ca.crt"]
	if len(ca) == 0 {
		return nil // not issued yet
	}
	key := types.NamespacedName{Name: c.configName}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.reader.Get(ctx, key, &vwc); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil {
		changed := false
		for i := range vwc.Webhooks {
			b := mergeBundle(ca, vwc.Webhooks[i].ClientConfig.CABundle, now)
			changed = changed || !bytes.Equal(b, vwc.Webhooks[i].ClientConfig.CABundle)
			vwc.Webhooks[i].ClientConfig.CABundle = b
		}
		if changed {
			if err := c.writer.Update(ctx, &vwc); err != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.reader.Get(ctx, key, &mwc); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil {
		changed := false
		for i := range mwc.Webhooks {
			b := mergeBundle(ca, mwc.Webhooks[i].ClientConfig.CABundle, now)
			changed = changed || !bytes.Equal(b, mwc.Webhooks[i].ClientConfig.CABundle)
			mwc.Webhooks[i].ClientConfig.CABundle = b
		}
		if changed {
			if err := c.writer.Update(ctx, &mwc); err != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	c.injected.Store(true)
	return nil
}
