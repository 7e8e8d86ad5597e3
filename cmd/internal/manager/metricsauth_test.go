package manager

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
)

func TestDeciderCachesAndExpires(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := 0
	allowed := true
	authzErrors := 0
	d := &decider{
		authenticate: func(_ context.Context, token string) (*authenticationv1.UserInfo, error) {
			calls++
			switch token {
			case "good":
				return &authenticationv1.UserInfo{Username: "prometheus"}, nil
			case "broken":
				return nil, errors.New("apiserver unavailable")
			case "flaky":
				return &authenticationv1.UserInfo{Username: "flaky"}, nil
			}
			return nil, nil
		},
		authorize: func(_ context.Context, u *authenticationv1.UserInfo, _ string) (bool, error) {
			if u.Username == "flaky" {
				authzErrors++
				return false, errors.New("SubjectAccessReview failed")
			}
			return allowed, nil
		},
		now:       func() time.Time { return clock },
		decisions: map[[32]byte]decision{},
	}
	log := logr.Discard()
	for _, tc := range []struct {
		token string
		want  int
	}{{"good", http.StatusOK}, {"unknown", http.StatusUnauthorized}, {"broken", http.StatusInternalServerError}} {
		if got := d.decide(context.Background(), tc.token, "/metrics", log); got != tc.want {
			t.Errorf("token %q: %d, want %d", tc.token, got, tc.want)
		}
	}
	// An error is not a decision: the same token asked again at the same instant calls the apiserver again.
	before := calls
	if got := d.decide(context.Background(), "broken", "/metrics", log); got != http.StatusInternalServerError || calls != before+1 {
		t.Fatalf("errors are not cached: %d after %d calls, want one new call", got, calls-before)
	}
	for i := 1; i <= 2; i++ {
		if got := d.decide(context.Background(), "flaky", "/metrics", log); got != http.StatusInternalServerError || authzErrors != i {
			t.Fatalf("authorization errors are not cached: call %d answered %d after %d authorizations", i, got, authzErrors)
		}
	}
	before = calls
	allowed = false // revoked, but the decision is cached for decisionTTL
	if got := d.decide(context.Background(), "good", "/metrics", log); got != http.StatusOK || calls != before {
		t.Fatalf("cached decision: %d after %d calls", got, calls-before)
	}
	clock = clock.Add(decisionTTL + time.Second)
	if got := d.decide(context.Background(), "good", "/metrics", log); got != http.StatusForbidden {
		t.Fatalf("after the TTL the revocation counts: %d", got)
	}
}
