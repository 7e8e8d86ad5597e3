package manager

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
)

// A leader that freezes (SIGSTOP, a stalled process, a long pause) for longer than its lease wakes up with its work
// queues, caches and in-flight reconciles as they were, while another replica leads. Until its leader elector
// notices, at its next renewal attempt, its reconciles go on writing from a stale view: on the local cluster a
// DaemonSet controller frozen past its lease created second pods on nodes for several seconds after it woke, beside
// the new leader's. The fence narrows that window to the requests already past it: a replica that led refuses its
// own writes once its last renewal of the lease is older than the renew deadline, which ends before the lease can
// expire for the other replicas (lease duration > renew deadline). Its elector is then about to give leadership up
// (the process exits when it does); should a renewal still succeed, the fence opens again, rightly. A request that
// passed the fence just before the freeze still lands after it, and the monotonic clock stands still while a whole
// machine is suspended: neither is covered.

// fence tracks this replica's renewals of its lease and refuses its writes once they lapse.
type fence struct {
	renewDeadline time.Duration
	now           func() time.Time

	mu      sync.Mutex
	renewed time.Time // the start of the last successful renewal by this replica; zero until it first leads

	// closedOnce logs the first refusal: one line says the fence closed, not one per write.
	closedOnce sync.Once
}

// newFence returns a fence that closes renewDeadline after the last renewal.
func newFence(renewDeadline time.Duration) *fence {
	return &fence{renewDeadline: renewDeadline, now: time.Now}
}

// renewedAt records a successful acquisition or renewal that started at t.
func (f *fence) renewedAt(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.renewed) {
		f.renewed = t
	}
}

// lapsed reports whether this replica led and has not renewed its lease for longer than the renew deadline: how
// long since then, and whether that is too long. A replica that never led is not fenced (a standby's own writes,
// such as its webhook certificate, are not a leader's).
func (f *fence) lapsed() (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renewed.IsZero() {
		return 0, false
	}
	since := f.now().Sub(f.renewed) // monotonic: a wall-clock jump neither opens nor closes the fence
	return since, since > f.renewDeadline
}

// exempt reports whether a request passes the fence whatever the lease: reads, leases (the elector's own client
// bypasses the fence, but nothing else of the process may be kept from its lease either), and token and access
// reviews (they change nothing).
func exempt(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	p := req.URL.Path
	return strings.HasPrefix(p, "/apis/coordination.k8s.io/") || strings.HasPrefix(p, "/apis/authentication.k8s.io/") ||
		strings.HasPrefix(p, "/apis/authorization.k8s.io/")
}

// wrap is the transport wrapper that enforces the fence on every client of the process.
func (f *fence) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if !exempt(req) {
			if since, closed := f.lapsed(); closed {
				f.closedOnce.Do(func() {
					ctrl.Log.WithName("leader-election").Info("Refusing writes: the lease was not renewed in time; another replica may lead",
						"sinceRenewal", since.String(), "renewDeadline", f.renewDeadline.String())
				})
				return nil, fmt.Errorf("refusing %s %s: this replica's leader lease was last renewed %s ago, beyond its renew "+
					"deadline of %s; another replica may lead now", req.Method, req.URL.Path, since.Round(time.Millisecond), f.renewDeadline)
			}
		}
		return rt.RoundTrip(req)
	})
}

// fencedLock is the lease lock of the leader election, telling the fence of each renewal this replica makes.
type fencedLock struct {
	resourcelock.Interface
	fence *fence
}

// Create records an acquisition of a new lease.
func (l fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := l.fence.now()
	err := l.Interface.Create(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.fence.renewedAt(start)
	}
	return err
}

// Update records an acquisition or a renewal (not a release, which writes no holder).
func (l fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := l.fence.now()
	err := l.Interface.Update(ctx, ler)
	if err == nil && ler.HolderIdentity == l.Identity() {
		l.fence.renewedAt(start)
	}
	return err
}

// leaseConfig is the leader election client's configuration: a copy of cfg with a token bucket of its own (the
// controllers' bursts of writes share cfg's, and a renewal must not wait behind them) and a timeout of half the renew
// deadline, at least a second (a single hung request must not cost the lease).
func leaseConfig(cfg *rest.Config, renewDeadline time.Duration) *rest.Config {
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.RateLimiter = nil // QPS and Burst make it a bucket of its own
	cfg.Timeout = max(renewDeadline/2, time.Second)
	return cfg
}

// newFencedLock makes the lease lock the manager would make (same identity form, hostname_uuid; same timeout rule
// for its requests; events on the lease), telling f of each renewal. cfg must not carry the fence itself.
func newFencedLock(cfg *rest.Config, scheme *runtime.Scheme, namespace, name string, renewDeadline time.Duration, f *fence) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	id := host + "_" + string(uuid.NewUUID())
	cs, err := kubernetes.NewForConfig(leaseConfig(cfg, renewDeadline))
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(namespace)})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: broadcaster.NewRecorder(scheme, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, err
	}
	return fencedLock{Interface: lock, fence: f}, nil
}
