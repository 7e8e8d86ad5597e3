// Command workload-sizer runs Keelson's WorkloadSizer controller, which keeps a Deployment or StatefulSet at its declared size.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
)

func main() {
	manager.Main(manager.Binary{
		Name:        "workload-sizer",
		AddToScheme: []func(*runtime.Scheme) error{sizerv1alpha1.AddToScheme},
	})
}
