package modelfetch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The pod's hold finds the entry from the links its fetch left.
	links := t.TempDir()
	withLinks := o
	withLinks.LinksDir = links
	if _, err := Fetch(context.Background(), ts.URL+"/a.bin", withLinks); err != nil {
		t.Fatal(err)
	}
	entry, err := LinkedEntry(links, o.CacheDir)
	if err != nil || entry != filepath.Dir(a.Path) {
		t.Fatalf("the links lead to %q (%v), want %s", entry, err, filepath.Dir(a.Path))
	}
	fetch("b") // b used after a again: a is the least recently used
	release, err := Hold(ctx, entry)
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

// A held version of a model stays when a new version of the same URI is fetched over the bound; a version no pod
// holds goes.
func TestAHeldVersionOfAModelStays(t *testing.T) {
	srv, ts := newModelServer(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := Options{CacheDir: t.TempDir(), MaxBytes: 250, Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	version := func(b byte) Result {
		t.Helper()
		srv.set("/m.bin", bytes.Repeat([]byte{b}, 100))
		res, err := Fetch(context.Background(), ts.URL+"/m.bin", o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	v1 := version('1')
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := Hold(ctx, filepath.Dir(v1.Path))
	if err != nil {
		t.Fatal(err)
	}
	v2 := version('2')
	version('3') // over the bound: v1 is the least recently used, but held; v2 goes
	if _, err := os.Stat(v1.Path); err != nil {
		t.Errorf("v1, held, was evicted: %v", err)
	}
	if _, err := os.Stat(v2.Path); !os.IsNotExist(err) {
		t.Errorf("v2, held by no pod, is still cached: %v", err)
	}
	release()
}

// A hold waits while an eviction holds the entry's lock, then takes it shared, which keeps the next eviction
// out; it ends when told to stop, and needs its directories.
func TestHold(t *testing.T) {
	var out bytes.Buffer
	if code := HoldMain([]string{"--cache-dir", t.TempDir()}, &out); code != 2 || !strings.Contains(out.String(), "--links-dir") {
		t.Fatalf("a hold without its links = %d, %q", code, out.String())
	}
	entry := filepath.Join(t.TempDir(), "key", "entry")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := makeInUse(entry); err != nil {
		t.Fatal(err)
	}
	unlockEvict, ok, err := tryLockFile(entry + inUseSuffix)
	if err != nil || !ok {
		t.Fatalf("an eviction's lock: %v, %v", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := make(chan error, 1)
	var release func()
	go func() {
		var err error
		release, err = Hold(ctx, entry)
		held <- err
	}()
	select {
	case err := <-held:
		t.Fatalf("the hold returned while an eviction held the entry: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlockEvict()
	if err := <-held; err != nil {
		t.Fatalf("the hold, once the eviction let go: %v", err)
	}
	if _, ok, _ := tryLockFile(entry + inUseSuffix); ok {
		t.Fatal("an eviction took the lock of a held entry")
	}
	release()
	unlock, ok, _ := tryLockFile(entry + inUseSuffix)
	if !ok {
		t.Fatal("the entry is still held after its release")
	}
	unlock()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if _, err := Hold(stopped, filepath.Join(t.TempDir(), "gone")); err == nil {
		t.Fatal("a hold of an entry with no lock file returned no error")
	}
}

// The hold finds its entry from the links the fetch left; a link that points out of the cache is refused.
func TestLinkedEntry(t *testing.T) {
	root, links := t.TempDir(), t.TempDir()
	if e, err := LinkedEntry(links, root); e != "" || err != nil {
		t.Fatalf("no links: %q, %v", e, err)
	}
	if err := os.Symlink(filepath.Join(root, "k", "d", modelDir, "weights.bin"), filepath.Join(links, "weights.bin")); err != nil {
		t.Fatal(err)
	}
	if e, err := LinkedEntry(links, root); e != filepath.Join(root, "k", "d") || err != nil {
		t.Fatalf("LinkedEntry = %q, %v", e, err)
	}
	other := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(other, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := LinkedEntry(other, root); err == nil {
		t.Fatal("a link out of the cache was taken for an entry")
	}
}
