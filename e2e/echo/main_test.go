package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPort(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", "8080"},
		{nil, "9000", "9000"},
		{[]string{"--model=x", "--listenPort=9080"}, "9000", "9080"},
		{[]string{"--port=7000"}, "", "7000"},
		{[]string{"--listenPort="}, "", "8080"},
	} {
		if got := port(tc.args, env(tc.env)); got != tc.want {
			t.Errorf("port(%v, PORT=%q) = %s, want %s", tc.args, tc.env, got, tc.want)
		}
	}
}

func TestCatFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cmdline")
	if err := os.WriteFile(p, []byte("/tini\x00--\x00/daemonset-controller\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := catFile(p); err != nil || got != "/tini -- /daemonset-controller" {
		t.Fatalf("catFile = %q, %v", got, err)
	}
}

// --write makes a file of the size asked for, its directories too, and refuses a spec without a size.
func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "face", "weights.bin")
	if err := writeFile(p + ":4096"); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(p); err != nil || info.Size() != 4096 {
		t.Fatalf("wrote %v, %v; want 4096 bytes", info, err)
	}
	for _, bad := range []string{p, p + ":-1", p + ":big", ":5"} {
		if err := writeFile(bad); err == nil {
			t.Errorf("--write=%s accepted", bad)
		}
	}
}

// A model is the same bytes for the same name and size, sent in full once per client that does not hold it yet:
// a request with its ETag gets 304 and counts nothing.
func TestModelServer(t *testing.T) {
	m := &modelServer{}
	get := func(url, etag string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, url, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		m.ServeHTTP(rec, req)
		return rec
	}
	a, b := get("/models/m.bin?size=100", ""), get("/models/m.bin?size=100", "")
	if a.Code != 200 || a.Body.Len() != 100 || a.Body.String() != b.Body.String() || a.Header().Get("ETag") == "" {
		t.Fatalf("first answers: %d, %d bytes, same %v", a.Code, a.Body.Len(), a.Body.String() == b.Body.String())
	}
	if other := get("/models/n.bin?size=100", ""); other.Body.String() == a.Body.String() {
		t.Fatal("two models have the same bytes")
	}
	if again := get("/models/m.bin?size=100", a.Header().Get("ETag")); again.Code != http.StatusNotModified {
		t.Fatalf("a request with the ETag: %d", again.Code)
	}
	if got := m.served.Load(); got != 3 {
		t.Fatalf("served %d models in full, want 3", got)
	}
	if bad := get("/models/m.bin?size=-1", ""); bad.Code != http.StatusBadRequest {
		t.Fatalf("a negative size: %d", bad.Code)
	}
}

// /signed/ redirects to the path it names with a signature, and a status asked for is answered with the request.
func TestSignedRedirectAndRefusals(t *testing.T) {
	rec := httptest.NewRecorder()
	signedRedirect(rec, httptest.NewRequest(http.MethodGet, "/signed/models/m.bin?size=10", nil))
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusFound || !strings.HasPrefix(loc, "/models/m.bin?") || !strings.Contains(loc, "X-Amz-Signature="+SignedSecret) ||
		!strings.Contains(loc, "size=10") {
		t.Fatalf("redirect: %d to %q", rec.Code, loc)
	}
	rec = httptest.NewRecorder()
	(&modelServer{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, loc+"&status=403", nil))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), SignedSecret) {
		t.Fatalf("refusal: %d %q", rec.Code, rec.Body.String())
	}
}

// The model's files are read through links, as a model cache leaves them: a link to a file and a link to a
// directory.
func TestModelFiles(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "weights"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"config.json": "{}", "weights/a.bin": "aaa"} {
		if err := os.WriteFile(filepath.Join(cache, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"config.json", "weights"} {
		if err := os.Symlink(filepath.Join(cache, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := modelFiles(dir)
	if err != nil || got != "config.json 2\nweights/a.bin 3\n" {
		t.Fatalf("modelFiles = %q, %v", got, err)
	}
}
