package main

import (
	"errors"
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

// A failed call belongs to the fault whose window it overlaps, sent before it began or not; outside every window
// it belongs to none.
func TestWindowOf(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	windows := []faultWindow{{FaultDelete, at(10), at(20)}, {FaultKill, at(30), at(40)}}
	for _, tc := range []struct {
		sent, answered int
		want           int
	}{
		{12, 13, 0},  // inside the first
		{10, 18, 0},  // sent as it began, answered within: in flight when the replica died
		{8, 18, -1},  // sent 2 s before it and hung until then: not hung by it
		{22, 25, -1}, // between two faults
		{29, 31, 1},  // across the second's start
		{41, 42, -1}, // after the last
		{2, 5, -1},   // before the first
	} {
		if got := windowOf(windows, at(tc.sent), at(tc.answered)); got != tc.want {
			t.Errorf("call %d→%d: window %d, want %d", tc.sent, tc.answered, got, tc.want)
		}
	}
}
