package daemonset

import (
	"testing"
	"time"
)

func TestFailureBackoff(t *testing.T) {
	b := newFailureBackoff(time.Second, 8*time.Second)
	t0 := now
	if d := b.remaining("ds/a", t0); d != 0 {
		t.Fatalf("no failure yet: remaining %s", d)
	}
	for i, want := range []time.Duration{1, 2, 4, 8, 8} {
		b.failed("ds/a", t0)
		if d := b.remaining("ds/a", t0); d != want*time.Second {
			t.Fatalf("failure %d: remaining %s, want %s", i+1, d, want*time.Second)
		}
	}
	if d := b.remaining("ds/a", t0.Add(3*time.Second)); d != 5*time.Second {
		t.Fatalf("3s into an 8s backoff: remaining %s, want 5s", d)
	}
	if d := b.remaining("ds/b", t0); d != 0 {
		t.Fatalf("another node is affected: %s", d)
	}
	b.failed("ds/a", t0.Add(time.Hour)) // long quiet spell: starts over
	if d := b.remaining("ds/a", t0.Add(time.Hour)); d != time.Second {
		t.Fatalf("after a quiet hour: remaining %s, want 1s", d)
	}
	b.forget("ds/")
	if d := b.remaining("ds/a", t0.Add(time.Hour)); d != 0 {
		t.Fatalf("forget left an entry: %s", d)
	}
}
