// Command pipeline-controller runs Keelson's Pipeline controller: multi-step model-inference pipelines.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
)

func main() {
	manager.Main(manager.Binary{
		Name:        "pipeline-controller",
		AddToScheme: []func(*runtime.Scheme) error{inferencev1alpha1.AddToScheme},
	})
}
