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

// Expectations that were never met and have expired are started afresh by the next Expect*: adding to the lost
// count would hold every later pass back for another TTL, and then another.
func TestExpiredExpectationsAreReset(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New()
	e.now = func() time.Time { return clock }

	e.ExpectCreations("ns/a", 2) // their events are lost
	e.ExpectDeletions("ns/a", "uid-lost")
	if got := e.Remaining("ns/a"); got != DefaultTTL {
		t.Fatalf("Remaining = %v, want the whole TTL %v", got, DefaultTTL)
	}
	clock = clock.Add(time.Minute)
	if got := e.Remaining("ns/a"); got != DefaultTTL-time.Minute {
		t.Fatalf("Remaining = %v, want %v", got, DefaultTTL-time.Minute)
	}
	clock = clock.Add(DefaultTTL)
	if !e.Satisfied("ns/a") || e.Remaining("ns/a") != 0 {
		t.Fatal("expired expectations still hold a pass back")
	}
	e.ExpectCreations("ns/a", 1)
	if e.Satisfied("ns/a") {
		t.Fatal("a new expectation after the TTL is not waited for")
	}
	e.CreationObserved("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("the expired expectations were added to instead of reset: one observed creation does not satisfy one expected")
	}

	e.ExpectCreations("ns/b", 1)
	clock = clock.Add(DefaultTTL + time.Second)
	e.ExpectDeletions("ns/b", "uid-1")
	e.DeletionObserved("ns/b", "uid-1")
	if !e.Satisfied("ns/b") {
		t.Fatal("a deletion expected after the TTL kept the expired creation")
	}
	if e.Remaining("ns/c") != 0 {
		t.Fatal("an unknown key has time remaining")
	}
}

// An update is seen once the cache shows its state, and not by an update to another state; a failed update or the
// object's deletion drops it.
func TestUpdateExpectations(t *testing.T) {
	e := New()
	e.ExpectUpdate("ns/a", "uid-1", "rev-2")
	e.UpdateObserved("ns/a", "uid-1", "rev-1") // an event from before the update
	if e.Satisfied("ns/a") {
		t.Fatal("satisfied by an event that does not show the update")
	}
	e.UpdateObserved("ns/a", "uid-1", "rev-2")
	if !e.Satisfied("ns/a") {
		t.Fatal("not satisfied after the update was seen")
	}
	e.ExpectUpdate("ns/a", "uid-1", "rev-3")
	e.UpdateAbandoned("ns/a", "uid-1")
	if !e.Satisfied("ns/a") {
		t.Fatal("a failed update is still expected")
	}
	e.ExpectUpdate("ns/a", "uid-1", "rev-4")
	e.DeletionObserved("ns/a", "uid-1")
	if !e.Satisfied("ns/a") {
		t.Fatal("the update of a deleted object is still expected")
	}
}
