package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca"
)

// RBAC for the self-signed mode, granted by the chart rather than by markers, because only the chart knows the
// names: each object is listed and watched by name (a metadata.name field selector), so the chart grants them by
// resourceNames, and only in this mode: the certificate Secret in the process's namespace (list, watch, update; a
// Role) and the process's two webhook configurations (list, watch, update; a ClusterRole rule).

// setupWebhooksWithRotation runs the process's own CA: a pass keeps the CA and serving certificate in a Secret of
// the pod's namespace, injects the CA into the webhook configurations, and hands the serving certificate to the
// webhook server in memory (serving's GetCertificate). The webhooks are registered at once; handshakes fail and
// /readyz stays failing until a certificate every bundle trusts is served. Every replica serves webhooks, so none
// of this waits for leadership.
func setupWebhooksWithRotation(mgr ctrl.Manager, b Binary, opts Options, serving *webhookca.ServingCert) error {
	ns, err := podNamespace()
	if err != nil {
		return err
	}
	svc := opts.WebhookServiceName
	certs := &webhookCerts{
		writer:     mgr.GetClient(),
		secret:     types.NamespacedName{Namespace: ns, Name: opts.WebhookCertSecret},
		configName: opts.WebhookConfigName,
		caName:     "keelson-" + b.Name + "-ca",
		dnsNames: []string{fmt.Sprintf("%s.%s.svc", svc, ns), svc, fmt.Sprintf("%s.%s", svc, ns),
			fmt.Sprintf("%s.%s.svc.cluster.local", svc, ns)},
		fieldOwner: b.Name,
		serving:    serving,
		now:        time.Now,
		log:        ctrl.Log.WithName("webhook-certificate"),
	}
	if err := watchWebhookCerts(mgr, certs); err != nil {
		return fmt.Errorf("setting up the webhook certificate: %w", err)
	}
	if err := b.SetupWebhooks(mgr); err != nil {
		return fmt.Errorf("registering webhooks: %w", err)
	}
	return mgr.AddReadyzCheck("webhooks", func(req *http.Request) error {
		if serving.Get() == nil {
			return errors.New("no webhook certificate every CA bundle trusts yet")
		}
		if !certs.injected.Load() {
			return errors.New("the webhook CA bundle is not injected yet")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	})
}

// watchWebhookCerts runs certs on every change of the Secret and of the two webhook configurations, read from a
// cache of its own that lists and watches exactly those three objects by name: the manager's cache would list
// every Secret of the namespace and every webhook configuration of the cluster.
func watchWebhookCerts(mgr ctrl.Manager, certs *webhookCerts) error {
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{certs.secret.Namespace: {}},
				Field: byName(certs.secret.Name)},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Field: byName(certs.configName)},
			&admissionregistrationv1.MutatingWebhookConfiguration{}:   {Field: byName(certs.configName)},
		},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return err
	}
	for _, o := range []client.Object{&corev1.Secret{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
		&admissionregistrationv1.MutatingWebhookConfiguration{}} {
		if _, err := c.GetInformer(context.Background(), o); err != nil {
			return err
		}
	}
	if err := mgr.Add(everyReplica{c}); err != nil {
		return err
	}
	certs.reader = c
	ctl, err := controller.New("webhook-certificate", mgr, controller.Options{
		Reconciler: certs, NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1})
	if err != nil {
		return err
	}
	// One key for every event: the pass looks at all three objects anyway.
	one := []reconcile.Request{{NamespacedName: certs.secret}}
	toOne := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return one })
	for _, o := range []client.Object{&corev1.Secret{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
		&admissionregistrationv1.MutatingWebhookConfiguration{}} {
		if err := ctl.Watch(source.Kind(c, o, toOne)); err != nil {
			return err
		}
	}
	return nil
}

// everyReplica runs a cache on every replica, leader or not.
type everyReplica struct{ cache.Cache }

var _ manager.LeaderElectionRunnable = everyReplica{}

// NeedLeaderElection is false: every replica serves webhooks and so needs the certificate.
func (everyReplica) NeedLeaderElection() bool { return false }

// checkReady GETs url and reports whether it answered 2xx.
func checkReady(url string) error {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url) //nolint:noctx // a one-shot probe with a timeout
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
