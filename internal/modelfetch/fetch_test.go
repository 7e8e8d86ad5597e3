package modelfetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// modelServer serves files over HTTP with an ETag of their content and answers conditional requests; it counts
// the bodies it sent.
type modelServer struct {
	mu     sync.Mutex
	files  map[string][]byte
	status map[string]int
	// announce adds a Repr-Digest header with this digest instead of the content's.
	announce map[string][]byte
	bodies   atomic.Int32
}

func newModelServer(t *testing.T) (*modelServer, *httptest.Server) {
	s := &modelServer{files: map[string][]byte{}, status: map[string]int{}, announce: map[string][]byte{}}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func (s *modelServer) set(name string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = body
}

func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, ok := s.files[r.URL.Path]
	status := s.status[r.URL.Path]
	announce := s.announce[r.URL.Path]
	s.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	if announce == nil {
		announce = sum[:]
	}
	w.Header().Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(announce)+":")
	s.bodies.Add(1)
	_, _ = w.Write(body)
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func readModel(t *testing.T, res Result, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.Path, name))
	if err != nil {
		t.Fatalf("the model's %s: %v", name, err)
	}
	return string(b)
}

// An archive is downloaded once, unpacked into the cache; the next fetch asks the server whether it changed and
// downloads nothing; a changed model is fetched beside the old one.
func TestHTTPModelIsCachedAndRevalidated(t *testing.T) {
	srv, ts := newModelServer(t)
	v1 := tarGz(t, file{name: "weights.bin", body: "v1"})
	srv.set("/models/m.tar.gz", v1)
	o := Options{CacheDir: t.TempDir()}
	uri := ts.URL + "/models/m.tar.gz"

	first, err := Fetch(context.Background(), uri, o)
	if err != nil || first.CacheHit || first.Digest != digestOf(v1) || first.Size != 2 {
		t.Fatalf("first fetch = %+v, %v", first, err)
	}
	if readModel(t, first, "weights.bin") != "v1" {
		t.Fatal("unpacked wrong")
	}
	second, err := Fetch(context.Background(), uri, o)
	if err != nil || !second.CacheHit || second.Path != first.Path || srv.bodies.Load() != 1 {
		t.Fatalf("second fetch = %+v, %v; %d bodies sent, want 1", second, err, srv.bodies.Load())
	}

	v2 := tarGz(t, file{name: "weights.bin", body: "v2"})
	srv.set("/models/m.tar.gz", v2)
	third, err := Fetch(context.Background(), uri, o)
	if err != nil || third.CacheHit || third.Digest != digestOf(v2) || third.Path == first.Path {
		t.Fatalf("after a change = %+v, %v", third, err)
	}
	if readModel(t, third, "weights.bin") != "v2" || readModel(t, first, "weights.bin") != "v1" {
		t.Fatal("the new model must sit beside the old one")
	}
}

// A URI pinned to its digest is served from the cache without a question to the server; the server down, an
// unpinned model is served from the cache, and says why.
func TestCacheHitsWithoutTheSource(t *testing.T) {
	srv, ts := newModelServer(t)
	body := []byte("onnx")
	srv.set("/m.onnx", body)
	o := Options{CacheDir: t.TempDir()}
	pinned := ts.URL + "/m.onnx#sha256=" + strings.TrimPrefix(digestOf(body), "sha256:")
	if _, err := Fetch(context.Background(), pinned, o); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(context.Background(), ts.URL+"/m.onnx", o); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	res, err := Fetch(context.Background(), pinned, o)
	if err != nil || !res.CacheHit || readModel(t, res, "m.onnx") != "onnx" {
		t.Fatalf("pinned, server down = %+v, %v", res, err)
	}
	res, err = Fetch(context.Background(), ts.URL+"/m.onnx", o)
	if err != nil || !res.CacheHit || !strings.Contains(res.Message, "could not be reached") {
		t.Fatalf("unpinned, server down = %+v, %v", res, err)
	}
}

// Each failure says why, in the reason the step's status shows; nothing is cached from a failed fetch.
func TestHTTPFailures(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.onnx", []byte("onnx"))
	srv.set("/bad.onnx", []byte("tampered"))
	srv.announce["/bad.onnx"] = bytes.Repeat([]byte{1}, 32)
	srv.status["/secret.onnx"] = http.StatusForbidden
	srv.set("/evil.tar.gz", tarGz(t, file{name: "../../etc/cron.d/x", body: "x"}))
	o := Options{CacheDir: t.TempDir()}
	for _, tc := range []struct{ uri, reason string }{
		{ts.URL + "/missing.onnx", ReasonNotFound},
		{ts.URL + "/secret.onnx", ReasonForbidden},
		{ts.URL + "/m.onnx#sha256=" + strings.Repeat("0", 64), ReasonChecksumMismatch},
		{ts.URL + "/bad.onnx", ReasonChecksumMismatch},
		{ts.URL + "/evil.tar.gz", ReasonUnsafeArchive},
		{"ftp://host/m.onnx", ReasonInvalidURI},
		{"http://127.0.0.1:1/m.onnx", ReasonUnreachable},
	} {
		res, err := Fetch(context.Background(), tc.uri, o)
		if err == nil || res.Reason != tc.reason || res.Message == "" {
			t.Errorf("%s: %+v, %v; want reason %s", tc.uri, res, err, tc.reason)
		}
	}
	entries, _ := filepath.Glob(filepath.Join(o.CacheDir, "*", "*", entryFile))
	if len(entries) != 0 {
		t.Errorf("failed fetches left entries: %v", entries)
	}
	if tmp, _ := os.ReadDir(filepath.Join(o.CacheDir, tmpDir)); len(tmp) != 0 {
		t.Errorf("failed fetches left downloads: %d", len(tmp))
	}
}

// Two steps starting at once on one node with the same model download it once.
func TestConcurrentFetchesDownloadOnce(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.onnx", []byte("onnx"))
	o := Options{CacheDir: t.TempDir()}
	var wg sync.WaitGroup
	results := make([]Result, 4)
	for i := range results {
		wg.Go(func() {
			var err error
			if results[i], err = Fetch(context.Background(), ts.URL+"/m.onnx", o); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	hits := 0
	for _, r := range results {
		if r.CacheHit {
			hits++
		}
		if r.Path != results[0].Path {
			t.Fatalf("paths differ: %+v", results)
		}
	}
	if srv.bodies.Load() != 1 || hits != 3 {
		t.Fatalf("%d downloads and %d hits, want 1 and 3", srv.bodies.Load(), hits)
	}
}

// Past its bound the cache evicts the least recently used models, never the one just fetched.
func TestEvictionIsLeastRecentlyUsed(t *testing.T) {
	srv, ts := newModelServer(t)
	for _, n := range []string{"a", "b", "c"} {
		srv.set("/"+n+".bin", bytes.Repeat([]byte(n), 100))
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := Options{CacheDir: t.TempDir(), MaxBytes: 250, Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	fetch := func(n string) Result {
		t.Helper()
		res, err := Fetch(context.Background(), ts.URL+"/"+n+".bin", o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := fetch("a"), fetch("b")
	fetch("a") // a used after b
	fetch("c") // over the bound: b goes
	if _, err := os.Stat(b.Path); !os.IsNotExist(err) {
		t.Errorf("b, least recently used, is still cached: %v", err)
	}
	if _, err := os.Stat(a.Path); err != nil {
		t.Errorf("a, used since, was evicted: %v", err)
	}
	// KeepFor orders the eviction but never holds the cache above its bound: a, used minutes ago, goes (a running
	// step's model is protected by its hold, not by KeepFor).
	recent := o
	recent.KeepFor = time.Hour
	if _, err := Fetch(context.Background(), ts.URL+"/b.bin", recent); err != nil { // over the bound again
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Errorf("a, least recently used, is kept above the bound because it was used within KeepFor: %v", err)
	}
	if total := cachedBytes(t, o.CacheDir); total > o.MaxBytes {
		t.Errorf("the cache holds %d bytes, above its bound of %d", total, o.MaxBytes)
	}
	// A model larger than the whole bound is refused before it fills the disk.
	tiny := o
	tiny.MaxBytes = 10
	if res, err := Fetch(context.Background(), ts.URL+"/b.bin?tiny", tiny); err == nil || res.Reason != ReasonTooLarge {
		t.Fatalf("a model larger than the bound = %+v, %v", res, err)
	}
}

// The same content back at the source (a rollback) is the entry the cache holds again: later fetches revalidate
// it, rather than the newer content that was there meanwhile, and download nothing.
func TestRollbackReusesTheEntry(t *testing.T) {
	srv, ts := newModelServer(t)
	o := Options{CacheDir: t.TempDir()}
	uri := ts.URL + "/m.bin"
	var v1 Result
	for i, body := range []string{"v1", "v2", "v1"} {
		srv.set("/m.bin", []byte(body))
		res, err := Fetch(context.Background(), uri, o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			v1 = res
		}
	}
	before := srv.bodies.Load()
	res, err := Fetch(context.Background(), uri, o)
	if err != nil || !res.CacheHit || res.Digest != v1.Digest || srv.bodies.Load() != before {
		t.Fatalf("after a rollback = %+v, %v; %d downloads more", res, err, srv.bodies.Load()-before)
	}
}

// An S3 prefix is fetched as a directory of its objects (not its siblings sharing the prefix's letters), revalidated
// by the objects' ETags, and fetched anew when one changes; a single object that is an archive is unpacked.
func TestS3Model(t *testing.T) {
	ts := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(ts.Close)
	endpoint := strings.TrimPrefix(ts.URL, "http://")
	cfg := S3Config{Endpoint: endpoint, Insecure: true, Region: "us-east-1", AccessKey: "key", SecretKey: "secret"}
	mc, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("key", "secret", ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "models", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		if _, err := mc.PutObject(ctx, "models", key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("resnet/", "x") // a "folder" marker, as the consoles make (with a byte: the fake refuses an empty body)
	put("resnet/weights/a.bin", "AAA")
	put("resnet/config.json", "{}")
	put("resnet-old/config.json", "old")
	put("single.tar.gz", string(tarGz(t, file{name: "w.bin", body: "W"})))

	o := Options{CacheDir: t.TempDir(), S3: cfg}
	first, err := Fetch(ctx, "s3://models/resnet", o)
	if err != nil || first.CacheHit || first.Size != 5 { // a.bin and config.json; not resnet-old's config.json
		t.Fatalf("first = %+v, %v", first, err)
	}
	if readModel(t, first, "weights/a.bin") != "AAA" || readModel(t, first, "config.json") != "{}" {
		t.Fatal("wrong files")
	}
	if slash, err := Fetch(ctx, "s3://models/resnet/", o); err != nil || slash.Digest != first.Digest {
		t.Fatalf("the prefix with a slash = %+v, %v; want the same content", slash, err)
	}
	second, err := Fetch(ctx, "s3://models/resnet", o)
	if err != nil || !second.CacheHit {
		t.Fatalf("second = %+v, %v", second, err)
	}
	put("resnet/config.json", `{"v":2}`)
	third, err := Fetch(ctx, "s3://models/resnet", o)
	if err != nil || third.CacheHit || third.Digest == first.Digest || readModel(t, third, "config.json") != `{"v":2}` {
		t.Fatalf("after a change = %+v, %v", third, err)
	}
	single, err := Fetch(ctx, "s3://models/single.tar.gz", o)
	if err != nil || readModel(t, single, "w.bin") != "W" {
		t.Fatalf("single archive = %+v, %v", single, err)
	}
	for uri, reason := range map[string]string{"s3://models/nothing-here": ReasonNotFound, "s3://no-bucket/x": ReasonNotFound} {
		if res, err := Fetch(ctx, uri, o); err == nil || res.Reason != reason {
			t.Errorf("%s = %+v, %v; want %s", uri, res, err, reason)
		}
	}
	if res, err := Fetch(ctx, "s3://models/resnet", Options{CacheDir: t.TempDir()}); err == nil || res.Reason != ReasonInvalidURI {
		t.Errorf("no endpoint = %+v, %v", res, err)
	}
}

// An entry is readable by any user (the step's server rarely runs as root), and what a step's server mounts is just
// the directory of its model's URI (KeyOf), which holds the entry.
func TestEntriesAreReadableAndUnderTheirKey(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.onnx", []byte("onnx"))
	o := Options{CacheDir: t.TempDir()}
	res, err := Fetch(context.Background(), ts.URL+"/m.onnx", o)
	if err != nil {
		t.Fatal(err)
	}
	key, err := KeyOf(ts.URL + "/m.onnx#sha256=" + strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Path, filepath.Join(o.CacheDir, key)+"/") {
		t.Fatalf("the model %s is not under its key %s", res.Path, key)
	}
	for dir := res.Path; dir != o.CacheDir; dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		if err != nil || info.Mode().Perm()&0o005 != 0o005 {
			t.Fatalf("%s: %v, %v: others cannot read it", dir, info.Mode(), err)
		}
	}
}

// cachedBytes is the size of every model the cache holds, as its entries record it.
func cachedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	_, total, err := (&cache{root: dir}).entries()
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// gatedServer serves each model's headers at once and its body only once release is closed (or two seconds have
// passed): fetches are then under way together.
type gatedServer struct {
	files   map[string][]byte
	release chan struct{}
}

func (g *gatedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := g.files[r.URL.Path]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-g.release:
	case <-time.After(2 * time.Second):
	}
	_, _ = w.Write(body)
}

// Fetches under way together share the bound: each claims its model's size (told in advance) before it writes it,
// so of three 100-byte models fetched at once into a 250-byte cache, two are let in and the third fails with a reason
// naming the sizes, CacheFull (it may fit later; each given the whole bound, with their downloads counted nowhere, all three would be). The
// bodies come once two fetches hold claims and one has ended.
func TestConcurrentFetchesShareTheBound(t *testing.T) {
	g := &gatedServer{files: map[string][]byte{}, release: make(chan struct{})}
	for _, n := range []string{"a", "b", "c"} {
		g.files["/"+n+".bin"] = bytes.Repeat([]byte(n), 100)
	}
	ts := httptest.NewServer(g)
	t.Cleanup(ts.Close)
	o := Options{CacheDir: t.TempDir(), MaxBytes: 250}
	results := make([]Result, 3)
	errs := make([]error, 3)
	var ended atomic.Int32
	var wg sync.WaitGroup
	for i, n := range []string{"a", "b", "c"} {
		wg.Go(func() {
			results[i], errs[i] = Fetch(context.Background(), ts.URL+"/"+n+".bin", o)
			ended.Add(1)
		})
	}
	go func() {
		defer close(g.release)
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			claims, _ := filepath.Glob(filepath.Join(o.CacheDir, tmpDir, "*"+claimSuffix))
			if len(claims) >= 2 && ended.Load() >= 1 {
				return
			}
		}
	}()
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		failed++
		if results[i].Reason != ReasonCacheFull || !strings.Contains(results[i].Message, "250 bytes") {
			t.Errorf("fetch %d: %+v, %v; want %s naming the bound", i, results[i], err, ReasonCacheFull)
		}
	}
	if failed != 1 {
		t.Errorf("%d fetches failed, want 1: three 100-byte models do not fit 250 bytes together", failed)
	}
	if total := cachedBytes(t, o.CacheDir); total > o.MaxBytes {
		t.Errorf("the cache holds %d bytes, above its bound of %d", total, o.MaxBytes)
	}
}

// What a fetch killed midway left (its download, its claim) is reclaimed by the next fetch on the node: it counts
// against the bound no longer, and the disk gets it back.
func TestAKilledFetchsStagingIsReclaimed(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.bin", bytes.Repeat([]byte("m"), 100))
	o := Options{CacheDir: t.TempDir(), MaxBytes: 250}
	dead := filepath.Join(o.CacheDir, tmpDir, "0123456789abcdef0123456789abcdef-123")
	if err := os.MkdirAll(filepath.Join(dead, modelDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "download"), bytes.Repeat([]byte("x"), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	claim := filepath.Join(o.CacheDir, tmpDir, "0123456789abcdef0123456789abcdef"+claimSuffix)
	if err := os.WriteFile(claim, []byte("200"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(context.Background(), ts.URL+"/m.bin", o); err != nil {
		t.Fatalf("a 100-byte model in a 250-byte cache holding only a dead fetch's 200 bytes: %v", err)
	}
	for _, p := range []string{dead, claim} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s, left by a fetch that died, is still there: %v", p, err)
		}
	}
}
