package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Failed admission calls are sorted by what the apiserver said; its messages quote the webhook's URL, whose
// "?timeout=10s" must not make every failure a timeout.
func TestAdmissionCause(t *testing.T) {
	const url = `failed calling webhook "mpipeline.keelson.dev": failed to call webhook: Post "https://keelson-pipeline-controller.keelson-system.svc:443/mutate-inference-keelson-dev-v1alpha1-pipeline?timeout=10s": `
	for msg, want := range map[string]string{
		url + "dial tcp 10.96.205.161:443: connect: connection refused": "connection refused",
		url + "EOF": "connection lost",
		url + "read tcp 10.0.0.1:4431->10.96.0.1:443: read: connection reset by peer": "connection lost",
		url + "context deadline exceeded":                                             "timed out",
		url + "net/http: TLS handshake timeout":                                       "timed out",
		url + `no endpoints available for service "x"`:                                "no endpoints",
		url + "x509: certificate signed by unknown authority":                         "other",
	} {
		if got := admissionCause(errors.New("Internal error occurred: " + msg)); got != want {
			t.Errorf("%q: %q, want %q", msg[len(url):], got, want)
		}
	}
}

// A failed call belongs to the fault whose window it overlaps, if sent just before it began or if the fault broke
// its connection; outside every window it belongs to none.
func TestWindowOf(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	windows := []faultWindow{{FaultDelete, at(10), at(20)}, {FaultKill, at(30), at(40)}}
	for _, tc := range []struct {
		sent, answered int
		broken         bool
		want           int
	}{
		{12, 13, false, 0},  // inside the first
		{10, 18, false, 0},  // sent as it began, answered within: in flight when the replica died
		{8, 18, false, -1},  // sent 2 s before it and hung until then: not hung by it
		{8, 11, true, 0},    // sent 2 s before it, its connection broken by it: the death's
		{22, 31, true, 1},   // sent between faults, broken by the second as it began: the second's
		{22, 31, false, -1}, // the same, timed out: held by something before the second
		{22, 37, true, -1},  // broken 7 s into the second: not by its death
		{18, 31, true, 0},   // sent in the first, 12 s before the second: the second did not break it
		{8, 21, true, -1},   // broken after the window closed: not by this death
		{22, 25, false, -1}, // between two faults
		{22, 25, true, -1},  // between two faults, broken there
		{29, 31, false, 1},  // across the second's start
		{41, 42, false, -1}, // after the last
		{2, 5, true, -1},    // before the first
	} {
		if got := windowOf(windows, at(tc.sent), at(tc.answered), tc.broken); got != tc.want {
			t.Errorf("call %d→%d (broken %v): window %d, want %d", tc.sent, tc.answered, tc.broken, got, tc.want)
		}
	}
}

// The failures that fail a run are quoted with when they were sent, so the one line a CI log ends with says
// which fault they followed (or none) and what the apiserver answered; a crash's failures are not quoted there.
func TestAttributeQuotesGatedCalls(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	windows := []faultWindow{{FaultDelete, at(10000), at(20000)}, {FaultKill, at(30000), at(40000)}}
	failed := []failedCall{
		{at: at(31000), end: at(31100), err: errors.New("dial tcp 10.96.0.9:443: connect: connection refused")},
		{at: at(12500), end: at(12600), err: errors.New("dial tcp 10.96.0.9:443: connect: connection refused")},
		{at: at(25000), end: at(35000), err: errors.New("context deadline exceeded")},
		{at: at(15000), end: at(15100), err: errors.New("x509: certificate signed by unknown authority")},
	}
	r := AdmissionResult{Failed: map[string]int{}, ByFault: map[string]int{}}
	r.attribute(failed, windows)
	// The certificate error is after the deletion and has a cause no death explains: one call, counted once.
	if n := r.GatedCalls; n != 3 {
		t.Fatalf("%d gated failures, want 3 (two after the deletion, one in no window)", n)
	}
	if len(r.Gated) != 3 {
		t.Fatalf("gated quotes %q, want 3", r.Gated)
	}
	for i, want := range []string{"sent 2.5 s into fault 1 (delete), answered 0.1 s later: dial tcp",
		"sent 5.0 s into fault 1 (delete), answered 0.1 s later: x509",
		"in no fault's window, answered 10.0 s later: context deadline exceeded"} {
		if !strings.Contains(r.Gated[i], want) {
			t.Errorf("quote %d is %q, want it to say %q", i, r.Gated[i], want)
		}
	}
}

// Only a crash's or a freeze's failures, explained by the death, are measured without failing the run.
func TestGates(t *testing.T) {
	for _, tc := range []struct {
		after, cause string
		want         bool
	}{
		{string(FaultKill), "connection refused", false},
		{string(FaultStop), "timed out", false},
		{string(FaultKill), "other", true},
		{string(FaultDelete), "connection refused", true},
		{"none", "timed out", true},
	} {
		if got := gates(tc.after, tc.cause); got != tc.want {
			t.Errorf("a %s call after %s: gates %v, want %v", tc.cause, tc.after, got, tc.want)
		}
	}
}
