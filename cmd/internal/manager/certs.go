package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// RBAC for the certificate rotation. The Secret is read in the process's own namespace only (the rotator's cache is
// namespaced); the chart binds these rules with a Role there, and limits the webhook configurations to its own by
// name.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch;update

// caInjectInterval is how often the CA bundles are checked against the certificate Secret.
const caInjectInterval = 30 * time.Second

// setupWebhooksWithRotation runs the process's own CA: the rotator keeps the CA and serving certificate in a Secret
// of the pod's namespace, writes them to the webhook cert dir and injects the CA into the webhook configurations.
// The webhooks are registered (and their server started) only once the certificate is on disk, and /readyz stays
// failing until then. Every replica serves webhooks, so none of this waits for leadership.
func setupWebhooksWithRotation(mgr ctrl.Manager, b Binary, opts Options) error {
	ns, err := podNamespace()
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	svc := opts.WebhookServiceName
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: ns, Name: opts.WebhookCertSecret},
		CertDir:        opts.WebhookCertDir,
		CAName:         "keelson-" + b.Name + "-ca",
		CAOrganization: "keelson",
		DNSName:        fmt.Sprintf("%s.%s.svc", svc, ns),
		ExtraDNSNames:  []string{svc, fmt.Sprintf("%s.%s", svc, ns), fmt.Sprintf("%s.%s.svc.cluster.local", svc, ns)},
		IsReady:        ready,
		// The rotator issues and rotates; it injects nothing: caInjector does, keeping the previous CA in the
		// bundle while it is valid, so a CA rotation never breaks replicas still serving an older certificate.
		Webhooks:              nil,
		FieldOwner:            b.Name,
		RequireLeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("setting up certificate rotation: %w", err)
	}
	injector := &caInjector{reader: mgr.GetAPIReader(), writer: mgr.GetClient(),
		secret:     types.NamespacedName{Namespace: ns, Name: opts.WebhookCertSecret},
		configName: opts.WebhookConfigName, interval: caInjectInterval}
	if err := mgr.Add(injector); err != nil {
		return err
	}
	if err := mgr.Add(&webhooksWhenReady{ready: ready, setup: func() error { return b.SetupWebhooks(mgr) }}); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhooks", func(req *http.Request) error {
		select {
		case <-ready:
		default:
			return errors.New("the webhook certificate is not ready yet")
		}
		if !injector.injected.Load() {
			return errors.New("the webhook CA bundle is not injected yet")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	})
}

// webhooksWhenReady registers the webhooks once the certificate exists. It runs on every replica.
type webhooksWhenReady struct {
	ready chan struct{}
	setup func() error
}

var _ manager.LeaderElectionRunnable = &webhooksWhenReady{}

// NeedLeaderElection is false: every replica serves webhooks.
func (*webhooksWhenReady) NeedLeaderElection() bool { return false }

// Start waits for the certificate, then registers the webhooks (the manager starts their server).
func (w *webhooksWhenReady) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-w.ready:
	}
	if err := w.setup(); err != nil {
		return fmt.Errorf("registering webhooks: %w", err)
	}
	<-ctx.Done()
	return nil
}

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
