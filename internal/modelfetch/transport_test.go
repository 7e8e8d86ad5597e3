package modelfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// caFile writes the certificate of a TLS test server, which no system root vouches for, as a PEM bundle.
func caFile(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.crt")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// An https source whose certificate a private CA signed is a TLS failure, until that CA's bundle is trusted; a
// bundle that holds no certificate is refused, with the reason, before anything is fetched.
func TestPrivateCABundle(t *testing.T) {
	srv := &modelServer{files: map[string][]byte{"/m.onnx": []byte("onnx")}, status: map[string]int{}, announce: map[string][]byte{}}
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	uri := ts.URL + "/m.onnx"
	if res, err := Fetch(context.Background(), uri, Options{CacheDir: t.TempDir()}); err == nil || res.Reason != ReasonTLS {
		t.Fatalf("without the bundle: %+v, %v; want %s", res, err, ReasonTLS)
	}
	pool, err := RootCAsWith("", caFile(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(context.Background(), uri, Options{CacheDir: t.TempDir(), RootCAs: pool})
	if err != nil || readModel(t, res, "m.onnx") != "onnx" {
		t.Fatalf("with the bundle: %+v, %v", res, err)
	}

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.crt")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resultFile := filepath.Join(dir, "result")
	var out bytes.Buffer
	code := Main([]string{"--uri", uri, "--cache-dir", filepath.Join(dir, "cache"), "--ca-file", empty, "--result-file", resultFile}, &out)
	var failure Result
	b, _ := os.ReadFile(resultFile)
	if code != 1 || json.Unmarshal(b, &failure) != nil || failure.Reason != ReasonTLS || !strings.Contains(failure.Message, "no PEM certificate") {
		t.Fatalf("a bundle without a certificate: exit %d, result %s", code, b)
	}
	if code := Main([]string{"--uri", uri, "--cache-dir", filepath.Join(dir, "cache"), "--ca-file", caFile(t, ts),
		"--result-file", resultFile}, &out); code != 0 {
		t.Fatalf("the command with the bundle: exit %d: %s", code, out.String())
	}
}

// An S3 endpoint that speaks TLS with a private CA's certificate is reached once its bundle is trusted.
func TestS3OverTLSWithAPrivateCA(t *testing.T) {
	ts := httptest.NewTLSServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(ts.Close)
	mc, err := minio.New(strings.TrimPrefix(ts.URL, "https://"), &minio.Options{Secure: true, Transport: ts.Client().Transport,
		Creds: credentials.NewStaticV4("key", "secret", ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "models", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(ctx, "models", "m/w.bin", strings.NewReader("W"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKey: "key", SecretKey: "secret"}
	if res, err := Fetch(ctx, "s3://models/m", Options{CacheDir: t.TempDir(), S3: cfg}); err == nil || res.Reason != ReasonTLS {
		t.Fatalf("without the bundle: %+v, %v; want %s", res, err, ReasonTLS)
	}
	pool, err := RootCAsWith("", caFile(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(ctx, "s3://models/m", Options{CacheDir: t.TempDir(), S3: cfg, RootCAs: pool})
	if err != nil || readModel(t, res, "w.bin") != "W" {
		t.Fatalf("with the bundle: %+v, %v", res, err)
	}
}

// Sources that only a proxy reaches (their names resolve nowhere else) are fetched through it: http models and
// S3 stores both.
func TestFetchesGoThroughTheProxy(t *testing.T) {
	var proxied atomic.Int32
	models := &modelServer{files: map[string][]byte{"/m.onnx": []byte("onnx")}, status: map[string]int{}, announce: map[string][]byte{}}
	s3 := gofakes3.New(s3mem.New()).Server()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		switch r.Host {
		case "models.invalid":
			models.ServeHTTP(w, r)
		case "s3.invalid":
			s3.ServeHTTP(w, r)
		default:
			http.Error(w, "no such host", http.StatusBadGateway)
		}
	}))
	t.Cleanup(proxy.Close)
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mc, err := minio.New("s3.invalid", &minio.Options{Creds: credentials.NewStaticV4("key", "secret", ""), Region: "us-east-1",
		Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, "models", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(ctx, "models", "m/w.bin", strings.NewReader("W"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	before := proxied.Load()

	o := Options{CacheDir: t.TempDir(), Proxy: http.ProxyURL(proxyURL),
		S3: S3Config{Endpoint: "http://s3.invalid", Region: "us-east-1", AccessKey: "key", SecretKey: "secret"}}
	if res, err := Fetch(ctx, "http://models.invalid/m.onnx", o); err != nil || readModel(t, res, "m.onnx") != "onnx" {
		t.Fatalf("http through the proxy: %+v, %v", res, err)
	}
	if res, err := Fetch(ctx, "s3://models/m", o); err != nil || readModel(t, res, "w.bin") != "W" {
		t.Fatalf("s3 through the proxy: %+v, %v", res, err)
	}
	if n := proxied.Load() - before; n < 2 {
		t.Fatalf("the proxy saw %d requests of the fetches", n)
	}

	// A proxy that wants credentials is a configuration to fix: the fetch fails with it, the cached copy does
	// not hide it (as it would a source that cannot be reached), for http and for https (a CONNECT refused).
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusProxyAuthRequired)
	}))
	t.Cleanup(refusing.Close)
	refusingURL, err := url.Parse(refusing.URL)
	if err != nil {
		t.Fatal(err)
	}
	o.Proxy = http.ProxyURL(refusingURL)
	for _, uri := range []string{"http://models.invalid/m.onnx", "https://models.invalid/m.onnx"} {
		if res, err := Fetch(ctx, uri, o); err == nil || res.Reason != ReasonProxy || res.CacheHit {
			t.Errorf("%s through a proxy that wants credentials: %+v, %v; want %s", uri, res, err, ReasonProxy)
		}
	}
}

// The operators' CA bundle (the fetch's environment) is trusted beside a namespace's; one that holds no
// certificate fails the fetch with the reason.
func TestOperatorsCABundle(t *testing.T) {
	srv := &modelServer{files: map[string][]byte{"/m.onnx": []byte("onnx")}, status: map[string]int{}, announce: map[string][]byte{}}
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	pem, err := os.ReadFile(caFile(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resultFile := filepath.Join(dir, "result")
	args := []string{"--uri", ts.URL + "/m.onnx", "--cache-dir", filepath.Join(dir, "cache"), "--result-file", resultFile}
	var out bytes.Buffer
	t.Setenv(EnvCABundle, string(pem))
	if code := Main(args, &out); code != 0 {
		t.Fatalf("with the operators' bundle: exit %d: %s", code, out.String())
	}
	t.Setenv(EnvCABundle, "not a certificate")
	code := Main(args, &out)
	var failure Result
	b, _ := os.ReadFile(resultFile)
	if code != 1 || json.Unmarshal(b, &failure) != nil || failure.Reason != ReasonTLS || !strings.Contains(failure.Message, EnvCABundle) {
		t.Fatalf("an operators' bundle without a certificate: exit %d, result %s", code, b)
	}
	if pool, err := RootCAsWith("", ""); pool != nil || err != nil {
		t.Fatalf("no bundle: %v, %v; want the system's roots (nil)", pool, err)
	}
}
