// Command workload-sizer runs Keelson's WorkloadSizer controller, which keeps a Deployment or StatefulSet at its
// declared size.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
	"github.com/keelson-dev/keelson/controllers/sizer"
	sizerwebhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

func main() {
	manager.Main(manager.Binary{
		Name:            "workload-sizer",
		AddToScheme:     []func(*runtime.Scheme) error{sizerv1alpha1.AddToScheme},
		Cache:           func(manager.Options) cache.Options { return sizer.CacheOptions() },
		RegisterMetrics: sizer.RegisterMetrics,
		SetupControllers: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&sizer.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
		Finalizers:     []manager.Finalizer{{GVK: sizerv1alpha1.GroupVersion.WithKind("WorkloadSizer"), Name: sizerv1alpha1.Finalizer}},
		SetupWebhooks:  sizerwebhook.SetupWithManager,
		AdmissionProbe: sizerwebhook.Probe,
	})
}
