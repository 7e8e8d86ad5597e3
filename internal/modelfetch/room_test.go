package modelfetch

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A fetch whose model cannot fit beside the models in use fails at once, CacheFull, and evicts nothing: a model no
// pod holds stays (emptying the cache for a fetch that fails anyway would cost every other step its copy).
func TestAModelThatCannotFitEvictsNothing(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/a.bin", bytes.Repeat([]byte("a"), 100))
	srv.set("/b.bin", bytes.Repeat([]byte("b"), 100))
	srv.set("/c.bin", bytes.Repeat([]byte("c"), 200))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := Options{CacheDir: t.TempDir(), MaxBytes: 250, Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	a, err := Fetch(context.Background(), ts.URL+"/a.bin", o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := Hold(ctx, filepath.Dir(a.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	b, err := Fetch(context.Background(), ts.URL+"/b.bin", o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(context.Background(), ts.URL+"/c.bin", o)
	if err == nil || res.Reason != ReasonCacheFull {
		t.Fatalf("200 bytes beside 100 in use in a 250-byte cache = %+v, %v; want %s", res, err, ReasonCacheFull)
	}
	if _, err := os.Stat(b.Path); err != nil {
		t.Errorf("b, held by no pod, was evicted for a fetch that could not fit anyway: %v", err)
	}
}

// A model just fetched is not evicted before its pod can take its hold (the hold comes seconds after the fetch
// ends): within holdGrace another fetch finds no room; a little later it does.
func TestAModelJustFetchedWaitsForItsHold(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/a.bin", bytes.Repeat([]byte("a"), 100))
	srv.set("/b.bin", bytes.Repeat([]byte("b"), 100))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := Options{CacheDir: t.TempDir(), MaxBytes: 150, KeepFor: time.Hour, Now: func() time.Time { return clock }}
	if _, err := Fetch(context.Background(), ts.URL+"/a.bin", o); err != nil {
		t.Fatal(err)
	}
	if res, err := Fetch(context.Background(), ts.URL+"/b.bin", o); err == nil || res.Reason != ReasonCacheFull {
		t.Fatalf("b within a second of a's fetch = %+v, %v; want %s", res, err, ReasonCacheFull)
	}
	clock = clock.Add(2 * holdGrace)
	if _, err := Fetch(context.Background(), ts.URL+"/b.bin", o); err != nil {
		t.Fatalf("b once a's grace is over (a is held by no pod): %v", err)
	}
}

// An archive is staging: only what it unpacks to counts against the bound, so a model that fits is not refused
// because its archive and the model, side by side while it unpacks, do not.
func TestAnArchiveCountsWhatItUnpacksTo(t *testing.T) {
	body := make([]byte, 9000)
	r := rand.New(rand.NewPCG(1, 2)) // incompressible: the archive is about as large as its model
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	srv, ts := newModelServer(t)
	srv.set("/m.tar.gz", tarGz(t, file{name: "weights.bin", body: string(body)}))
	o := Options{CacheDir: t.TempDir(), MaxBytes: 16000}
	if res, err := Fetch(context.Background(), ts.URL+"/m.tar.gz", o); err != nil {
		t.Fatalf("an archive of a 9000-byte model in a 16000-byte cache: %+v, %v", res, err)
	}
}
