package manager

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// apiserverWait is how long a starting binary waits for the apiserver to answer before it builds its manager, whose
// setup fails at once when the apiserver cannot be reached (discovery of its API groups). A controller restarted while
// the apiserver restarts starts into the outage, and its pod reaches the restarted apiserver only once kube-proxy has
// seen the apiserver's endpoint again, which can be tens of seconds after the apiserver is ready: without the wait
// the binary exits and the kubelet restarts it once more, after a back-off. /healthz is served only once the manager
// is built, so the chart's startup probe (18 × 5 s) covers the wait and the setup after it.
const apiserverWait = 45 * time.Second

// apiserverPoll is how often the apiserver is asked while the binary waits, and apiserverAsk how long one ask may
// take: a request sent into an outage must not hang past the wait, and an apiserver's /readyz checks etcd within 2 s.
const (
	apiserverPoll = time.Second
	apiserverAsk  = 3 * time.Second
)

// waitForAPIServer asks the apiserver for /readyz every interval, each ask given up after ask, until it answers
// (answered), ctx ends or limit passes, and returns the last error then, or ctx's when it ended (nil once it
// answered).
func waitForAPIServer(ctx context.Context, cfg *rest.Config, interval, ask, limit time.Duration, log logr.Logger) error {
	asking := rest.CopyConfig(cfg)
	asking.Timeout = ask
	asking.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(asking)
	if err != nil {
		return err
	}
	var last error
	waited := false
	err = wait.PollUntilContextTimeout(ctx, interval, limit, true, func(ctx context.Context) (bool, error) {
		last = rc.Get().AbsPath("/readyz").Do(ctx).Error()
		if answered(last) {
			return true, nil
		}
		if !waited && ctx.Err() == nil {
			waited = true
			log.Info("Waiting for the apiserver", "for", limit, "error", last.Error())
		}
		return false, nil
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && last != nil:
		return last
	case err == nil && waited:
		log.Info("The apiserver answers")
	}
	return err
}

// answered says whether an ask of /readyz reached an apiserver that is there: it answered ok, or refused with a
// client error that asking again would not change (a cluster that keeps /readyz from service accounts: 403; a front
// that does not serve the path: 404). A 401 is waited on: an apiserver that has just started may not yet know the
// tokens it is shown. An error of the connection, a 5xx (not ready: etcd down, say) and a 429 are waited on too.
func answered(err error) bool {
	if err == nil {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := int(status.Status().Code)
	return code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusTooManyRequests
}

// awaitAPIServer waits for the apiserver before the manager is built (waitForAPIServer, for apiserverWait), and goes
// on when it does not answer: the manager's setup then fails and says why. It returns false when ctx ended meanwhile
// (the binary was asked to stop: it should, without starting).
func awaitAPIServer(ctx context.Context, log logr.Logger) bool {
	cfg, err := config.GetConfig()
	if err != nil {
		return true // newManager reports it
	}
	err = waitForAPIServer(ctx, cfg, apiserverPoll, apiserverAsk, apiserverWait, log)
	switch {
	case ctx.Err() != nil:
		log.Info("Stopped while waiting for the apiserver")
		return false
	case err != nil:
		log.Info("The apiserver did not answer in time; starting anyway", "waited", apiserverWait, "error", err.Error())
	}
	return true
}
