package modelfetch

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// A model that a running pod holds stays in the cache however long ago it was fetched, so that its server finds it
// again when it restarts: the eviction takes the next least recently used instead, and takes the held one once it
// is let go.
func TestAHeldModelIsNotEvicted(t *testing.T) {
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
	key, err := KeyOf(ts.URL + "/a.bin")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := Hold(ctx, o.CacheDir, key)
	if err != nil {
		t.Fatal(err)
	}
	fetch("c") // over the bound: a is the least recently used, but held
	if _, err := os.Stat(a.Path); err != nil {
		t.Errorf("a, held by a running pod, was evicted: %v", err)
	}
	if _, err := os.Stat(b.Path); !os.IsNotExist(err) {
		t.Errorf("b, the least recently used of those not held, is still cached: %v", err)
	}
	release()
	fetch("b") // over the bound again: a, let go, goes
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Errorf("a, no longer held, is still cached: %v", err)
	}
}

// A hold waits for the fetch to make its lock, ends when told to stop, and needs a model URI.
func TestHoldCommand(t *testing.T) {
	var out bytes.Buffer
	if code := HoldMain([]string{"--cache-dir", t.TempDir()}, &out); code != 2 || !strings.Contains(out.String(), "--uri") {
		t.Fatalf("a hold without a URI = %d, %q", code, out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Hold(ctx, t.TempDir(), "0123"); err == nil {
		t.Fatal("a hold without a lock file to take, told to stop, returned no error")
	}
}
