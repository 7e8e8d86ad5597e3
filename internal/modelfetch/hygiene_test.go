package modelfetch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A source that redirects to a presigned URL (an object store's signed link) leaves no signature in what the fetch
// says, whatever happens after the redirect: the message names the model's own URI.
func TestARedirectsSignatureShowsNowhere(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := closed.Addr().String()
	_ = closed.Close() // nothing answers there: the fetch fails after the redirect
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+dead+"/bucket/m.onnx?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA", http.StatusFound)
	}))
	defer ts.Close()
	res, err := Fetch(context.Background(), ts.URL+"/m.onnx", Options{CacheDir: t.TempDir()})
	if err == nil {
		t.Fatal("the fetch succeeded")
	}
	for _, text := range []string{res.Message, err.Error()} {
		if strings.Contains(text, "deadbeef") || strings.Contains(text, "AKIA") || strings.Contains(text, "X-Amz") {
			t.Fatalf("the signed URL shows: %q", text)
		}
	}
	if !strings.Contains(res.Message, ts.URL+"/m.onnx") {
		t.Fatalf("the message does not name the model's URI: %q", res.Message)
	}
}

// An https source that redirects to plain http is refused: the model would cross the network unprotected, and a
// cached copy must not hide the refusal.
func TestAnHTTPSRedirectToHTTPIsRefused(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("model")) }))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/m.onnx", http.StatusFound)
	}))
	defer tls.Close()
	o := Options{CacheDir: t.TempDir(), testClient: tls.Client()}
	res, err := Fetch(context.Background(), tls.URL+"/m.onnx", o)
	if err == nil {
		t.Fatal("the downgrade was followed")
	}
	if res.Reason == ReasonUnreachable {
		t.Fatalf("a refused redirect reads as Unreachable (the cache would serve): %+v", res)
	}
	if !strings.Contains(res.Message, "https to http") {
		t.Fatalf("the message does not say why: %q", res.Message)
	}
}

// Only a source that cannot be reached is Unreachable (the cached copy then serves); an answer that is not HTTP is
// a failure to see.
func TestAMalformedAnswerIsNotUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 1024)
			_, _ = c.Read(buf)
			_, _ = c.Write([]byte("this is not HTTP\r\n\r\n"))
			_ = c.Close()
		}
	}()
	res, _ := Fetch(context.Background(), "http://"+l.Addr().String()+"/m.onnx", Options{CacheDir: t.TempDir()})
	if res.Reason != ReasonFailed {
		t.Fatalf("reason %q for a malformed answer, want %s: %+v", res.Reason, ReasonFailed, res)
	}
}

// A URI carrying a token or key in its query would put it in the pod spec, where tenants read it: refused.
func TestCredentialParametersAreRefused(t *testing.T) {
	for _, param := range []string{"access_token", "private_token", "api_key", "apikey", "X-Api-Key", "client_secret"} {
		if _, err := Parse("https://models.example/m.onnx?" + param + "=s3cr3t"); err == nil {
			t.Errorf("%s: admitted", param)
		} else if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the refusal quotes the value: %v", param, err)
		}
	}
}
