package apis_test

import (
	"strings"
	"testing"
)

// modulePath is this module's own import path; its packages may import each other.
const modulePath = "github.com/keelson-dev/keelson/apis"

// allowedImport reports whether a package of the API module may import path. The API module is what clients vendor,
// so it stays small: the standard library, the Kubernetes API types and machinery, and controller-runtime's scheme
// builder. Anything else (client-go, controller-runtime at large, a logging library) belongs in the root module.
func allowedImport(path string) bool {
	switch {
	case !strings.Contains(strings.SplitN(path, "/", 2)[0], "."):
		return true // standard library: its first path element has no dot
	case path == modulePath || strings.HasPrefix(path, modulePath+"/"):
		return true
	case strings.HasPrefix(path, "k8s.io/api/"), strings.HasPrefix(path, "k8s.io/apimachinery/"):
		return true
	case path == "sigs.k8s.io/controller-runtime/pkg/scheme":
		return true
	}
	return false
}

func TestAllowedImport(t *testing.T) {
	for path, want := range map[string]bool{
		"fmt":                                  true,
		"k8s.io/api/core/v1":                   true,
		"k8s.io/apimachinery/pkg/apis/meta/v1": true,
		"sigs.k8s.io/controller-runtime/pkg/scheme": true,
		modulePath + "/daemonset/v1alpha1":          true,
		"k8s.io/client-go/kubernetes":               false,
		"sigs.k8s.io/controller-runtime/pkg/client": false,
		"k8s.io/apimachineryx/foo":                  false,
		"github.com/go-logr/logr":                   false,
	} {
		if got := allowedImport(path); got != want {
			t.Errorf("allowedImport(%q) = %v, want %v", path, got, want)
		}
	}
}
