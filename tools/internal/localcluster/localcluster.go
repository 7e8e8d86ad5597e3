// Package localcluster is what the development tools that drive the local cluster (the benchmarks, the reliability
// suite) share: a client that knows Keelson's kinds, and the pool of simulated nodes.
package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// FakeNodeLabels select the simulated nodes the cluster tool makes.
var FakeNodeLabels = map[string]string{"keelson.dev/fake-node": "true"}

// Client connects to the cluster of kubeconfig with a client budget of qps and burst, knowing the built-in kinds
// and Keelson's three.
func Client(kubeconfig string, qps float32, burst int) (client.Client, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, daemonsetv1alpha1.AddToScheme,
		sizerv1alpha1.AddToScheme, inferencev1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cfg, err
}

// ResizePool makes the simulated node pool hold exactly n nodes (the cluster tool at tool, the cluster's directory
// dir) and waits until all of them are Ready and schedulable, so that nothing that runs next meets nodes still
// joining.
func ResizePool(ctx context.Context, c client.Client, tool, dir string, n int) error {
	if out, err := exec.CommandContext(ctx, tool, "nodes", "--dir", dir, "--fake-nodes", strconv.Itoa(n)).CombinedOutput(); err != nil {
		return fmt.Errorf("resizing the simulated nodes: %w\n%s", err, out)
	}
	// The node lifecycle controller lifts the not-ready taint node by node, its writes conflicting with the
	// simulated kubelets' heartbeats: 5000 new nodes beside 5000 others took longer than 15 minutes on a busy host.
	timeout := 5*time.Minute + time.Duration(n)*150*time.Millisecond
	ready, total := 0, 0
	err := wait.Poll(ctx, 200*time.Millisecond, timeout, func() (bool, error) {
		var list corev1.NodeList
		if err := c.List(ctx, &list, client.MatchingLabels(FakeNodeLabels)); err != nil {
			return false, err
		}
		ready, total = 0, len(list.Items)
		for _, node := range list.Items {
			if Schedulable(&node) {
				ready++
			}
		}
		return ready == n && total == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d simulated nodes to be schedulable (%d of %d were after %s): %w", n, ready, total, timeout, err)
	}
	return nil
}

// Schedulable says whether a node is Ready and carries no not-ready or unreachable taint.
func Schedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
