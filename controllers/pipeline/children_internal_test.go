package pipeline

import "testing"

// A URL names its host only as a whole host (or with the cluster's domain): another Service whose name starts or
// ends alike is not it.
func TestNamesHost(t *testing.T) {
	host := "p-b.ns.svc"
	for value, want := range map[string]bool{
		"http://p-b.ns.svc:8080":                        true,
		"http://p-b.ns.svc":                             true,
		"http://p-b.ns.svc/v1/predict":                  true,
		"http://p-a.ns.svc:8080,http://p-b.ns.svc:9090": true,
		"http://p-b.ns.svc.cluster.local:8080":          true,
		"http://p-bb.ns.svc:8080":                       false,
		"http://xp-b.ns.svc:8080":                       false,
		"http://p-b.ns.svcx:8080,http://p-b.ns.svc":     true,
		"p-b.ns.svc:8080":                               false,
		"":                                              false,
	} {
		if got := namesHost(value, host); got != want {
			t.Errorf("namesHost(%q) = %v, want %v", value, got, want)
		}
	}
}
