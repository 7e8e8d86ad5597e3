package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// A binary started while the apiserver cannot answer waits for it, then starts: no exit and restart for an outage
// the apiserver is coming back from. One that refuses the ask is there: no wait. One that never answers is given up
// on after the wait, with its error.
func TestWaitForAPIServer(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if asked.Add(1) <= 2 {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	if err := waitForAPIServer(context.Background(), &rest.Config{Host: srv.URL}, 10*time.Millisecond, 5*time.Second,
		logr.Discard()); err != nil || asked.Load() != 3 {
		t.Fatalf("an apiserver ready at the third ask: %v after %d asks; want no error after 3", err, asked.Load())
	}

	var refused atomic.Int32
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused.Add(1)
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer forbidden.Close()
	if err := waitForAPIServer(context.Background(), &rest.Config{Host: forbidden.URL}, 10*time.Millisecond, 5*time.Second,
		logr.Discard()); err != nil || refused.Load() != 1 {
		t.Fatalf("an apiserver that refuses /readyz: %v after %d asks; want no error after 1", err, refused.Load())
	}

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	start := time.Now()
	err := waitForAPIServer(context.Background(), &rest.Config{Host: down.URL}, 10*time.Millisecond, 200*time.Millisecond,
		logr.Discard())
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("an apiserver that never answers: %v after %s; want its error once the wait is over", err, time.Since(start))
	}
}
