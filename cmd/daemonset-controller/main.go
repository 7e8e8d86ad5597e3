// Command daemonset-controller runs Keelson's DaemonSet controller: one pod per eligible node, with safer rollouts than apps/v1.
//
// Run it with --help for its flags. In a cluster it is installed by the keelson Helm chart.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/cmd/internal/manager"
)

func main() {
	manager.Main(manager.Binary{
		Name:        "daemonset-controller",
		AddToScheme: []func(*runtime.Scheme) error{daemonsetv1alpha1.AddToScheme},
	})
}
