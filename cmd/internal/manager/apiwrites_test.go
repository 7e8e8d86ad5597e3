package manager

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWriteOf(t *testing.T) {
	for _, tc := range []struct {
		method, path          string
		verb, group, resource string
		write                 bool
	}{
		{"POST", "/api/v1/namespaces/default/pods", "create", "", "pods", true},
		{"DELETE", "/api/v1/namespaces/default/pods/web-1", "delete", "", "pods", true},
		{"DELETE", "/api/v1/namespaces/default/pods", "deletecollection", "", "pods", true},
		{"PATCH", "/api/v1/namespaces/default/pods/web-1/status", "patch", "", "pods/status", true},
		{"PUT", "/api/v1/namespaces/default/pods/web-1/resize", "update", "", "pods/resize", true},
		{"PATCH", "/apis/daemonset.keelson.dev/v1alpha1/namespaces/ns/daemonsets/agent/status", "patch", "daemonset.keelson.dev", "daemonsets/status", true},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "create", "events.k8s.io", "events", true},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", "create", "authentication.k8s.io", "tokenreviews", true},
		{"PUT", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/keelson", "update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/keelson-system/leases/keelson-daemonset-controller", "update", "coordination.k8s.io", "leases", true},
		// A Namespace itself, and its own subresources.
		{"DELETE", "/api/v1/namespaces/team-a", "delete", "", "namespaces", true},
		{"PUT", "/api/v1/namespaces/team-a/finalize", "update", "", "namespaces/finalize", true},
		{"PATCH", "/api/v1/nodes/node-1/status", "patch", "", "nodes/status", true},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/sa/token", "create", "", "serviceaccounts/token", true},
		// Reads are not writes.
		{"GET", "/api/v1/namespaces/default/pods", "", "", "", false},
		{"GET", "/apis/apps/v1/deployments?watch=true", "", "", "", false},
		// A write outside the API has no resource.
		{"POST", "/healthz", "create", "", "", true},
	} {
		verb, group, resource, ok := writeOf(tc.method, strings.Split(tc.path, "?")[0])
		if verb != tc.verb || group != tc.group || resource != tc.resource || ok != tc.write {
			t.Errorf("%s %s: (%q, %q, %q, %v), want (%q, %q, %q, %v)", tc.method, tc.path, verb, group, resource, ok,
				tc.verb, tc.group, tc.resource, tc.write)
		}
	}
}

func TestCountWritesCountsEveryWriteAndNoRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusConflict) // a failed write is still a write
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: countWrites(http.DefaultTransport)}
	created := apiWrites.WithLabelValues("create", "apps", "controllerrevisions")
	before := testutil.ToFloat64(created)
	for _, m := range []string{http.MethodPost, http.MethodPost, http.MethodGet} {
		req, _ := http.NewRequest(m, srv.URL+"/apis/apps/v1/namespaces/ns/controllerrevisions", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := testutil.ToFloat64(created) - before; got != 2 {
		t.Fatalf("counted %v creates, want 2", got)
	}
}

// The reviews of every scrape and the lease's renewals change nothing of the cluster's: they are not counted.
func TestCountWritesLeavesOutReviewsAndLeases(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := &http.Client{Transport: countWrites(http.DefaultTransport)}
	uncounted := map[string][3]string{
		"/apis/authentication.k8s.io/v1/tokenreviews":                                 {http.MethodPost, "authentication.k8s.io", "tokenreviews"},
		"/apis/authorization.k8s.io/v1/subjectaccessreviews":                          {http.MethodPost, "authorization.k8s.io", "subjectaccessreviews"},
		"/apis/coordination.k8s.io/v1/namespaces/keelson-system/leases/keelson-sizer": {http.MethodPut, "coordination.k8s.io", "leases"},
		"/apis/coordination.k8s.io/v1/namespaces/keelson-system/leases":               {http.MethodPost, "coordination.k8s.io", "leases"},
	}
	before := map[string]float64{}
	for path, w := range uncounted {
		before[path] = testutil.ToFloat64(apiWrites.WithLabelValues(map[string]string{http.MethodPost: "create", http.MethodPut: "update"}[w[0]], w[1], w[2]))
	}
	for path, w := range uncounted {
		req, _ := http.NewRequest(w[0], srv.URL+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	for path, w := range uncounted {
		got := testutil.ToFloat64(apiWrites.WithLabelValues(map[string]string{http.MethodPost: "create", http.MethodPut: "update"}[w[0]], w[1], w[2]))
		if got != before[path] {
			t.Errorf("%s %s counted %v times, want none", w[0], path, got-before[path])
		}
	}
}
