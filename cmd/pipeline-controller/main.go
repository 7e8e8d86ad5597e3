// Command pipeline-controller runs Keelson's Pipeline controller: multi-step model-inference pipelines.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
//
// pipeline-controller fetch-model fetches a step's model into the node's model cache instead (a step's init
// container runs it, from this same image); --help lists its flags. pipeline-controller hold-model holds that model
// in the cache while the step's pod runs (its sidecar), so that the cache does not evict it.
package main

import (
	"os"

	// The image holds no certificate store (scratch): the fetches of https and TLS S3 models trust the roots this
	// package embeds (Mozilla's), used only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/modelfetch"
	pipelinewebhook "github.com/keelson-dev/keelson/webhooks/pipeline"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == modelfetch.Command {
		os.Exit(modelfetch.Main(os.Args[2:], os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == modelfetch.HoldCommand {
		os.Exit(modelfetch.HoldMain(os.Args[2:], os.Stdout))
	}
	// The fetch settings are read once: the controller writes them into new steps and the fetcher webhook into new
	// step pods.
	fetch, fetchErr := pipeline.ModelFetchFromEnv(os.Getenv)
	if fetchErr != nil {
		// Only the pipelines of storage cache need it: they fail with the reason, the others run.
		fetch.Problem = fetchErr.Error()
	}
	manager.Main(manager.Binary{
		Name:            "pipeline-controller",
		AddToScheme:     []func(*runtime.Scheme) error{inferencev1alpha1.AddToScheme},
		Cache:           func(manager.Options) cache.Options { return pipeline.CacheOptions() },
		RegisterMetrics: pipeline.RegisterMetrics,
		SetupControllers: func(mgr ctrl.Manager, _ manager.Options) error {
			if fetchErr != nil {
				ctrl.Log.Error(fetchErr, "Fetching models into the nodes' caches is off")
			}
			return (&pipeline.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ModelFetch: fetch}).SetupWithManager(mgr)
		},
		Finalizers:     []manager.Finalizer{{GVK: inferencev1alpha1.GroupVersion.WithKind("Pipeline"), Name: inferencev1alpha1.Finalizer}},
		SetupWebhooks:  func(mgr ctrl.Manager) error { return pipelinewebhook.SetupWithManager(mgr, fetch.Fetcher()) },
		AdmissionProbe: pipelinewebhook.Probe,
	})
}
