package manager

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// apiserverWait is how long a starting binary waits for the apiserver to answer before it builds its manager, whose
// setup fails at once when the apiserver cannot be reached (discovery of its API groups). A controller restarted while
// the apiserver restarts starts into the outage, and its pod reaches the restarted apiserver only once kube-proxy has
// seen the apiserver's endpoint again, which can be tens of seconds after the apiserver is ready: without the wait
// the binary exits and the kubelet restarts it once more, after a back-off. It stays below the liveness probe's
// grace (three failures 10 s apart: /healthz is served only once the manager is built).
const apiserverWait = 25 * time.Second

// apiserverPoll is how often the apiserver is asked while the binary waits.
const apiserverPoll = time.Second

// waitForAPIServer asks the apiserver for /readyz every interval until it answers ok, ctx ends or limit passes, and
// returns the last error then (nil once it answered). Each ask gives up after the interval: a request sent into an
// outage must not hang past the wait. An apiserver that refuses the ask (a cluster that keeps /readyz from service
// accounts) answers too: it is there, and the binary does not wait on it.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, interval, limit time.Duration, log logr.Logger) error {
	asking := rest.CopyConfig(cfg)
	asking.Timeout = interval
	cs, err := kubernetes.NewForConfig(asking)
	if err != nil {
		return err
	}
	var last error
	waited := false
	err = wait.PollUntilContextTimeout(ctx, interval, limit, true, func(ctx context.Context) (bool, error) {
		last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		if apierrors.IsForbidden(last) || apierrors.IsUnauthorized(last) {
			last = nil
		}
		if last != nil && !waited {
			waited = true
			log.Info("Waiting for the apiserver", "for", limit, "error", last.Error())
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	if waited && err == nil {
		log.Info("The apiserver answers")
	}
	return err
}

// awaitAPIServer waits for the apiserver before the manager is built (waitForAPIServer, for apiserverWait), and goes
// on when it does not answer: the manager's setup then fails and says why.
func awaitAPIServer(ctx context.Context, log logr.Logger) {
	cfg, err := config.GetConfig()
	if err != nil {
		return // newManager reports it
	}
	if err := waitForAPIServer(ctx, cfg, apiserverPoll, apiserverWait, log); err != nil {
		log.Info("The apiserver did not answer in time; starting anyway", "waited", apiserverWait, "error", err.Error())
	}
}
