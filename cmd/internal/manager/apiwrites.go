package manager

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/transport"
)

// apiWrites counts the process's writes to the apiserver as its audit log would show them: by the audit verb, and
// by the API group and resource (with the subresource after a slash, as RBAC spells it: pods/status). The
// benchmarks count the same writes from the audit log; this lets a running controller tell them itself.
var apiWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "keelson_apiserver_writes_total",
	Help: "Requests that write to the apiserver (create, update, patch, delete, deletecollection), failed ones included, by verb, API group and resource; token and access reviews and leader election leases are not counted.",
}, []string{"verb", "group", "resource"})

// uncountedGroups are the API groups whose writes apiWrites leaves out, the groups the write fence lets through
// too (see exempt): token and access reviews (two per scrape of /metrics not in the metrics guard's cache) and
// the leader election Lease's renewals (one every retry period) change no object of the cluster's; counted, they
// would drown the controllers' own writes and move with the scrape interval rather than with the work.
var uncountedGroups = map[string]bool{
	"authentication.k8s.io": true,
	"authorization.k8s.io":  true,
	"coordination.k8s.io":   true,
}

// countWrites wraps a client's transport so that every write it sends is counted in apiWrites, but for the
// uncountedGroups'. It is installed on the manager's rest.Config, so every client made from it (the manager's,
// the event recorders', the metrics guard's, the certificate pass's, the lease lock's) is counted, and nothing
// else needs to remember to.
func countWrites(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if verb, group, resource, ok := writeOf(req.Method, req.URL.Path); ok && !uncountedGroups[group] {
			apiWrites.WithLabelValues(verb, group, resource).Inc()
		}
		return rt.RoundTrip(req)
	})
}

var _ transport.WrapperFunc = countWrites

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// writeOf tells what a request writes: its audit verb, API group and resource ("pods", "pods/status"). Reads
// (GET, HEAD, OPTIONS, and so watches) are not writes; a write to a path that names no resource is counted with
// an empty group and resource "".
func writeOf(method, path string) (verb, group, resource string, ok bool) {
	group, resource, named := resourceOf(path)
	switch method {
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch" // server-side apply too: the audit log calls it a patch
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		return "", "", "", false
	}
	return verb, group, resource, true
}

// namespaceSubresources are the subresources of a Namespace itself: /api/v1/namespaces/<name>/status is the
// namespace's status, not a resource called status in that namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// resourceOf parses a Kubernetes API path the way the apiserver's request info does: /api/<version>/... (the core
// group) or /apis/<group>/<version>/..., then an optional namespaces/<namespace>/, then
// <resource>[/<name>[/<subresource>]]. named says whether a name is in it. A path outside the API (/healthz)
// has no resource.
func resourceOf(path string) (group, resource string, named bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && !namespaceSubresources[parts[2]] {
		parts = parts[2:] // a namespaced resource
	}
	switch len(parts) {
	case 1:
		return group, parts[0], false
	case 2:
		return group, parts[0], true
	default:
		return group, parts[0] + "/" + parts[2], true
	}
}
