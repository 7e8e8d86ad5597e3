//go:build integration

package charts_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// installAgainstCluster runs `helm install --dry-run=server` of the chart against the test apiserver, so the
// templates' lookups see a real cluster, and returns the error the user would see.
func installAgainstCluster(t *testing.T, vals map[string]any) error {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := namespace
	flags.Namespace = &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.DryRun, install.DryRunOption, install.Replace = true, "server", true
	install.ReleaseName, install.Namespace = "keelson", namespace
	// The test apiserver has the CRDs already (not Helm's to take over): render everything else.
	all := map[string]any{"crds": map[string]any{"install": false}}
	for k, v := range vals {
		all[k] = v
	}
	_, err = install.Run(chrt, all)
	return err
}

// Checks that ask the cluster: a controller is not turned off while objects of its kind (with finalizers only it
// removes) exist, and optional integrations say which CRD they miss.
func TestChecksAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{}) })
	g.Expect(envErr).NotTo(HaveOccurred())
	ctx := context.Background()
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())

	off := map[string]any{"workloadSizer": map[string]any{"enabled": false}}
	g.Expect(installAgainstCluster(t, off)).To(Succeed(), "no WorkloadSizer exists: turning the sizer off is fine")

	wls := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sizer.keelson.dev/v1alpha1", "kind": "WorkloadSizer",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":     map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "web"}, "size": 1},
	}}
	g.Expect(env.Client.Create(ctx, wls)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, wls) })
	g.Expect(installAgainstCluster(t, off)).To(MatchError(ContainSubstring(
		"workloadSizer.enabled=false: 1 WorkloadSizer object(s) still exist")))
	g.Expect(installAgainstCluster(t, nil)).To(Succeed(), "with the sizer on, its objects are fine")

	// DaemonSets carry no finalizers: their controller may go off while they exist (their pods run on, unmanaged).
	ds := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "daemonset.keelson.dev/v1alpha1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "agent", "namespace": "default"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "agent"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "agent"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "agent:1"}}}}},
	}}
	g.Expect(env.Client.Create(ctx, ds)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, ds) })
	g.Expect(installAgainstCluster(t, map[string]any{"daemonsetController": map[string]any{"enabled": false}})).
		To(Succeed(), "a DaemonSet has no finalizer to be left behind")
	// Without crds.keep, the CRD would go with the controller, and every DaemonSet with it: refused.
	g.Expect(installAgainstCluster(t, map[string]any{"daemonsetController": map[string]any{"enabled": false},
		"crds": map[string]any{"keep": false}})).To(MatchError(ContainSubstring(
		"daemonsetController.enabled=false: 1 DaemonSet object(s) still exist, and with crds.keep=false their CRD would go")))

	g.Expect(installAgainstCluster(t, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})).
		To(MatchError(ContainSubstring("metrics.serviceMonitor.enabled needs the ServiceMonitor CRD")))
	g.Expect(installAgainstCluster(t, map[string]any{"webhooks": map[string]any{"certs": map[string]any{"mode": "certManager"}}})).
		To(MatchError(ContainSubstring("webhooks.certs.mode=certManager needs cert-manager")))
}
