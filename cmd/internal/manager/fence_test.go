package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The fence is open for a replica that never led and for a leader that renews; it closes once the last renewal is
// older than the renew deadline, for every write but the lease's own and token and access reviews.
func TestFenceClosesWhenRenewalsLapse(t *testing.T) {
	now := time.Now()
	f := newFence(10 * time.Second)
	f.now = func() time.Time { return now }
	sent := 0
	rt := f.wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}))
	do := func(method, path string) error {
		resp, err := rt.RoundTrip(httptest.NewRequest(method, "https://apiserver"+path, nil))
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	const pods = "/api/v1/namespaces/ns/pods"
	if err := do(http.MethodPost, pods); err != nil {
		t.Fatalf("a replica that never led is not fenced: %v", err)
	}

	f.renewedAt(now.Add(-5 * time.Second))
	if err := do(http.MethodPost, pods); err != nil {
		t.Fatalf("renewed 5 s ago, within the 10 s deadline: %v", err)
	}

	f.renewedAt(now.Add(-30 * time.Second)) // an older renewal never moves the record back
	if err := do(http.MethodDelete, pods+"/p"); err != nil {
		t.Fatalf("the last renewal is still 5 s old: %v", err)
	}

	now = now.Add(6 * time.Second) // 11 s since the last renewal: frozen past the deadline
	sent = 0
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		err := do(method, pods+"/p")
		if err == nil || !strings.Contains(err.Error(), "last renewed 11s ago") {
			t.Errorf("%s after the deadline: got %v, want a refusal saying how long ago", method, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d refused writes reached the apiserver", sent)
	}
	for _, req := range [][2]string{
		{http.MethodGet, pods},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews"},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews"},
	} {
		if err := do(req[0], req[1]); err != nil {
			t.Errorf("%s %s passes the fence: %v", req[0], req[1], err)
		}
	}
}

// fakeLock is a lease lock whose writes fail when told to.
type fakeLock struct {
	resourcelock.Interface
	fail bool
}

func (l *fakeLock) Identity() string { return "me_1" }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	if l.fail {
		return errors.New("timeout")
	}
	return nil
}
func (l *fakeLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, r)
}

// Only this replica's successful acquisitions and renewals count; a failed one and a release do not.
func TestFencedLockRecordsOwnRenewals(t *testing.T) {
	now := time.Now()
	f := newFence(10 * time.Second)
	f.now = func() time.Time { return now }
	inner := &fakeLock{}
	l := fencedLock{Interface: inner, fence: f}
	ctx := context.Background()

	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: ""}); err != nil {
		t.Fatal(err)
	}
	if !f.renewed.IsZero() {
		t.Fatal("a release is not a renewal")
	}
	inner.fail = true
	_ = l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me_1"})
	if !f.renewed.IsZero() {
		t.Fatal("a failed acquisition is not a renewal")
	}
	inner.fail = false
	if err := l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me_1"}); err != nil {
		t.Fatal(err)
	}
	if !f.renewed.Equal(now) {
		t.Fatalf("renewed = %v, want the acquisition's start %v", f.renewed, now)
	}
	now = now.Add(3 * time.Second)
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me_1"}); err != nil {
		t.Fatal(err)
	}
	if !f.renewed.Equal(now) {
		t.Fatalf("renewed = %v, want the renewal's start %v", f.renewed, now)
	}
}

// Every client made from the manager's configuration shares one token bucket of --kube-api-qps and --kube-api-burst;
// the leader election client has a bucket of its own, of the same size, so a renewal never waits behind a burst.
func TestClientBudgetIsSharedAndTheLeaseHasItsOwn(t *testing.T) {
	cfg := &rest.Config{Host: "https://apiserver.example"}
	budget(cfg, "daemonset-controller", Options{KubeAPIQPS: 50, KubeAPIBurst: 100})
	if cfg.RateLimiter == nil || cfg.RateLimiter.QPS() != 50 {
		t.Fatalf("the manager's configuration carries no shared bucket of 50 a second: %v", cfg.RateLimiter)
	}
	a, err := rest.RESTClientFor(withGroup(cfg, "apps"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rest.RESTClientFor(withGroup(cfg, "daemonset.keelson.dev"))
	if err != nil {
		t.Fatal(err)
	}
	if a.GetRateLimiter() != b.GetRateLimiter() {
		t.Fatal("two clients of the manager's configuration have buckets of their own")
	}
	lease := leaseConfig(cfg, 10*time.Second)
	if lease.RateLimiter != nil || lease.QPS != 50 || lease.Burst != 100 || lease.Timeout != 5*time.Second {
		t.Fatalf("lease configuration: limiter %v, qps %v, burst %d, timeout %s", lease.RateLimiter, lease.QPS, lease.Burst, lease.Timeout)
	}
}

// withGroup is a copy of cfg for one API group's REST client.
func withGroup(cfg *rest.Config, group string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: group, Version: "v1"}
	c.APIPath = "/apis"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}
