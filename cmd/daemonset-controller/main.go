// Command daemonset-controller runs Keelson's DaemonSet controller: one pod per eligible node, with safer rollouts
// than apps/v1.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
	"github.com/keelson-dev/keelson/controllers/daemonset"
	daemonsetwebhook "github.com/keelson-dev/keelson/webhooks/daemonset"
)

func main() {
	manager.Main(manager.Binary{
		Name:            "daemonset-controller",
		AddToScheme:     []func(*runtime.Scheme) error{daemonsetv1alpha1.AddToScheme},
		Cache:           func(manager.Options) cache.Options { return daemonset.CacheOptions() },
		RegisterMetrics: daemonset.RegisterMetrics,
		SetupControllers: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&daemonset.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
		SetupWebhooks:  daemonsetwebhook.SetupWithManager,
		AdmissionProbe: daemonsetwebhook.Probe,
	})
}
