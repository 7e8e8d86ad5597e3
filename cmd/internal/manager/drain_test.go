package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// fakeWebhookServer serves its mux until its context ends; the rest of webhook.Server is not called.
type fakeWebhookServer struct {
	webhook.Server
	mux *http.ServeMux
}

func (f *fakeWebhookServer) Register(path string, h http.Handler) { f.mux.Handle(path, h) }
func (f *fakeWebhookServer) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Once the manager is told to stop, the server keeps answering for the drain period, and every answer asks the
// client to close its connection; then the server stops.
func TestDrainingAnswersCloseTheirConnections(t *testing.T) {
	fake := &fakeWebhookServer{mux: http.NewServeMux()}
	s := newDrainingServer(fake, 200*time.Millisecond)
	s.Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	answer := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		fake.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", nil))
		return rec
	}
	if got := answer().Header().Get("Connection"); got != "" {
		t.Fatalf("before the stop, an answer says Connection: %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec := answer()
	if rec.Code != http.StatusOK || rec.Header().Get("Connection") != "close" {
		t.Fatalf("while draining: code %d, Connection %q; want 200 and close", rec.Code, rec.Header().Get("Connection"))
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := s.wait(wctx); err != nil {
		t.Fatalf("the server did not stop after the drain: %v", err)
	}
}

// Over HTTP/2, as the apiserver calls webhooks, an answer with Connection: close makes the client's next request
// open a new connection (the server sends GOAWAY): that one the Service routes to a replica that stays.
func TestAnswersWhileDrainingMoveAnHTTP2ClientToANewConnection(t *testing.T) {
	var draining atomic.Bool
	srv := httptest.NewUnstartedServer(closingWhileDraining{draining: &draining,
		inner: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	call := func() (reused bool, proto string) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("answered %d", resp.StatusCode)
		}
		return reused, resp.Proto
	}
	if _, proto := call(); proto != "HTTP/2.0" {
		t.Fatalf("the test server speaks %s, want HTTP/2.0", proto)
	}
	if reused, _ := call(); !reused {
		t.Fatal("before draining, the second call did not reuse the connection")
	}
	draining.Store(true)
	call() // answered, with the connection's GOAWAY
	// The GOAWAY races the client's next request; within a few calls the client must be on a new connection.
	for range 5 {
		if reused, _ := call(); !reused {
			return
		}
	}
	t.Fatal("five calls after an answer sent while draining, the client still used the old connection")
}
