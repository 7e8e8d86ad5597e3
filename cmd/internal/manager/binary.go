package manager

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/keelson-dev/keelson/internal/admissioncheck"
)

// Binary describes one Keelson controller binary: its name, the API groups it uses and what it registers.
type Binary struct {
	// Name is the binary's name, e.g. "daemonset-controller"; it also names the default leader election Lease.
	Name string
	// AddToScheme registers the binary's own API groups; the built-in Kubernetes groups are always registered.
	AddToScheme []func(*runtime.Scheme) error
	// Cache narrows what the informer cache holds (label selectors per object), given the parsed options.
	// Nil caches every watched object in full.
	Cache func(Options) cache.Options
	// SetupControllers registers the binary's controllers with the manager. Nil registers none.
	SetupControllers func(mgr ctrl.Manager, opts Options) error
	// SetupWebhooks registers the binary's admission webhooks. Nil means the binary serves no webhooks.
	SetupWebhooks func(mgr ctrl.Manager) error
	// Finalizers are the finalizers the binary's controllers put on objects; --release-finalizers removes them.
	Finalizers []Finalizer
	// AdmissionProbe is what --check-admission-namespace sends through the apiserver to the binary's webhooks (see
	// package admissioncheck). Nil for a binary without webhooks.
	AdmissionProbe func() admissioncheck.Probe
	// RegisterMetrics registers the binary's own metrics (its kinds' state, read from the manager's cache) with
	// controller-runtime's registry, once per process. Nil registers none.
	RegisterMetrics func(mgr ctrl.Manager) error
}

// Finalizer is a finalizer a binary puts on objects of one kind. Uninstalling the binary must take it off again,
// or deleting those objects (or their namespace) hangs with nobody left to remove it.
type Finalizer struct {
	// GVK is the kind whose objects carry the finalizer.
	GVK schema.GroupVersionKind
	// Name is the finalizer, e.g. "sizer.keelson.dev/release".
	Name string
}
