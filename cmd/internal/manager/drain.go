package manager

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// drainingServer is the webhook server, kept serving for a while after the manager is told to stop.
//
// A replica that stops serving the moment it gets SIGTERM refuses the admission calls kube-proxy still sends it
// until its endpoint leaves the Service (a second or so): during a `helm upgrade`, users' writes would fail with
// "connection refused". Delaying the whole manager would not do either: it releases its lease only once every
// runnable has stopped, and the next leader would wait. So the manager sees this server stop at once and moves on
// (controllers stop, the lease is released), while the real server goes on answering for the drain period; Run
// waits for it before the process exits.
//
// Answering is not enough: the apiserver keeps its connections to this replica open (an established connection
// is not rerouted when the endpoint leaves the Service), and would go on sending on them until the server closes
// them at the end of the drain, where a request sent just then fails. So while draining, every answer carries
// "Connection: close": an HTTP/1.1 connection closes after it, an HTTP/2 one gets a graceful GOAWAY, and the
// apiserver's next call opens a new connection, which the Service sends to a replica that stays. The drain
// begins once controller-runtime stops its webhook runnables, after the controllers and caches have stopped; the
// server answers throughout. A connection that carries no call during the whole drain is still closed at its
// end, and a call racing that close can fail: at the apiserver's call rates, such a connection is idle.
type drainingServer struct {
	webhook.Server
	drain time.Duration
	// draining says the manager was told to stop: answers close their connections.
	draining atomic.Bool
	// stopped is closed once the real server has returned.
	stopped chan struct{}
	once    sync.Once
	// began says Start was called: a binary without webhooks never starts the server.
	began atomic.Bool
}

func newDrainingServer(s webhook.Server, drain time.Duration) *drainingServer {
	return &drainingServer{Server: s, drain: drain, stopped: make(chan struct{})}
}

// Start serves until ctx is done and returns then; the real server stops drain later.
func (s *drainingServer) Start(ctx context.Context) error {
	s.began.Store(true)
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	errc := make(chan error, 1)
	go func() {
		defer s.once.Do(func() { close(s.stopped) })
		errc <- s.Server.Start(serveCtx)
	}()
	select {
	case err := <-errc: // it could not start (a port in use, no certificate): the manager must hear of it
		stop()
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	time.AfterFunc(s.drain, stop)
	return nil
}

// closingWhileDraining answers as inner does, and once the server drains, asks the client to close the connection
// after the answer.
type closingWhileDraining struct {
	draining *atomic.Bool
	inner    http.Handler
}

// ServeHTTP answers the request with the inner handler, after setting "Connection: close" while draining.
func (h closingWhileDraining) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.draining.Load() {
		w.Header().Set("Connection", "close")
	}
	h.inner.ServeHTTP(w, r)
}

// serving says whether the server was started (and so may still be draining).
func (s *drainingServer) serving() bool { return s.began.Load() }

// wait blocks until the real server has stopped, or until ctx is done.
func (s *drainingServer) wait(ctx context.Context) error {
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
