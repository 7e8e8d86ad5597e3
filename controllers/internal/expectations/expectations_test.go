package expectations

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New()
	e.now = func() time.Time { return clock }

	if !e.Satisfied("ns/a") {
		t.Fatal("an unknown key must be satisfied")
	}
	e.ExpectCreations("ns/a", 2)
	e.ExpectDeletions("ns/a", "uid-1")
	e.CreationObserved("ns/a")
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied with one creation and one deletion outstanding")
	}
	e.CreationObserved("ns/a")
	e.DeletionObserved("ns/a", "uid-other") // someone else's deletion does not count
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied by the deletion of an object that was not expected")
	}
	e.DeletionObserved("ns/a", "uid-1")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied after every expectation was observed")
	}
	e.CreationObserved("ns/a") // an extra observation never makes the count negative
	e.ExpectCreations("ns/a", 1)
	if e.Satisfied("ns/a") {
		t.Fatal("an extra observation cancelled a later expectation")
	}
	if !e.Satisfied("ns/b") {
		t.Fatal("keys are independent")
	}

	clock = clock.Add(DefaultTTL + time.Second)
	if !e.Satisfied("ns/a") {
		t.Fatal("expectations older than the TTL must not block forever")
	}
	e.Forget("ns/a")
	e.ExpectDeletions("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("Forget left expectations behind")
	}
}
