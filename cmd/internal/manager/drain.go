package manager

import (
	"context"
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
type drainingServer struct {
	webhook.Server
	drain time.Duration
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
	time.AfterFunc(s.drain, stop)
	return nil
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
