package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// readyzAfter serves /readyz with code until it was asked fails times, then ok; it counts the asks.
func readyzAfter(t *testing.T, fails int32, code int) (*rest.Config, *atomic.Int32) {
	t.Helper()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if asked.Add(1) <= fails {
			http.Error(w, http.StatusText(code), code)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, &asked
}

// A binary started while the apiserver cannot answer waits for it, then starts: no exit and restart for an outage
// the apiserver is coming back from. A 401 is waited on (a restarted apiserver may not know the tokens yet); a 403
// or 404 is an apiserver that is there; one that never answers is given up on after the wait, with its error; a
// stop asked meanwhile ends the wait at once.
func TestWaitForAPIServer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		fails      int32
		code       int
		wantAsks   int32
		wantsError bool
	}{
		{"not ready twice, then ready", 2, http.StatusServiceUnavailable, 3, false},
		{"unauthorized twice, then ready", 2, http.StatusUnauthorized, 3, false},
		{"forbidden", 1000, http.StatusForbidden, 1, false},
		{"not served", 1000, http.StatusNotFound, 1, false},
		{"never ready", 1000, http.StatusInternalServerError, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, asked := readyzAfter(t, tc.fails, tc.code)
			err := waitForAPIServer(ctx, cfg, 10*time.Millisecond, time.Second, 300*time.Millisecond, logr.Discard())
			if (err != nil) != tc.wantsError || (tc.wantAsks > 0 && asked.Load() != tc.wantAsks) {
				t.Fatalf("%v after %d asks; want an error: %v, asks: %d", err, asked.Load(), tc.wantsError, tc.wantAsks)
			}
		})
	}
	stopped, cancel := context.WithCancel(ctx)
	cfg, _ := readyzAfter(t, 1000, http.StatusServiceUnavailable)
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if err := waitForAPIServer(stopped, cfg, 10*time.Millisecond, time.Second, time.Minute, logr.Discard()); !errors.Is(err, context.Canceled) ||
		time.Since(start) > 10*time.Second {
		t.Fatalf("a stop during the wait: %v after %s; want context.Canceled at once", err, time.Since(start))
	}
}
