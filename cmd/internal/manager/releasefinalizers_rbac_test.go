//go:build integration

package manager_test

// The --release-finalizers mode run with only the permissions the chart gives the controller's ServiceAccount,
// against objects of the binary's kinds: what an uninstall with objects present meets on a real cluster.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// grantAsTheChartDoes binds binary's generated ClusterRole, and the Role rules the chart gives the uninstall hook
// in the release namespace, to a user of their own, and returns that user's kubeconfig.
func grantAsTheChartDoes(t *testing.T, binary, namespace, deployment string) string {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "charts", "keelson", "files", "rbac", binary+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	user := "release-" + binary + "-" + namespace
	role.ObjectMeta = metav1.ObjectMeta{Name: user}
	hookRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{deployment}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{deployment}, Verbs: []string{"update", "patch"}},
	}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{&role, hookRole,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfigAs(path, user); err != nil {
		t.Fatal(err)
	}
	return path
}

// runReleaseAs runs binary in --release-finalizers mode with kubeconfig, as if in namespace.
func runReleaseAs(binary, kubeconfig, namespace string, extra ...string) (string, int) {
	cmd := exec.Command(filepath.Join(binDir, binary), append([]string{"--kubeconfig=" + kubeconfig}, extra...)...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+namespace)
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// pipeline creates a Pipeline carrying finalizers.
func pipeline(t *testing.T, namespace, name string, finalizers ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.keelson.dev/v1alpha1",
		"kind":       "Pipeline",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"modelStorage": map[string]any{"type": "nfs", "csiParameter": map[string]any{"server": "nfs.example", "share": "/models"}},
			"steps":        []any{map[string]any{"name": "only", "image": "server:v1", "location": "node-a"}}},
	}}
	u.SetFinalizers(finalizers)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// helm uninstall with objects of each finalizing kind present: the hook, with only its controller's permissions,
// stops the controller and takes the finalizer off every object (a Pipeline's role grants patch, not update).
func TestReleaseFinalizersWithTheChartsPermissions(t *testing.T) {
	for _, tc := range []struct {
		binary, finalizer string
		object            func(*testing.T, string, string, ...string) *unstructured.Unstructured
	}{
		{"workload-sizer", sizerFinalizer, workloadSizer},
		{"pipeline-controller", "inference.keelson.dev/storage", pipeline},
	} {
		t.Run(tc.binary, func(t *testing.T) {
			g := NewWithT(t)
			ns := releaseNamespace(t, "rbac-"+tc.binary)
			users := releaseNamespace(t, "rbac-users-"+tc.binary)
			d := controllerDeployment(t, ns, "keelson-"+tc.binary)
			obj := tc.object(t, users, "present", tc.finalizer, otherFinalizer)
			clearFinalizersAtEnd(t, obj)
			kubeconfig := grantAsTheChartDoes(t, tc.binary, ns, d.Name)

			out, code := runReleaseAs(tc.binary, kubeconfig, ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=30s")
			g.Expect(code).To(Equal(0), out)
			g.Expect(finalizersOf(g, obj)).To(Equal([]string{otherFinalizer}))
		})
	}
}

// A hook that fails after it stopped the controller (here its deadline, a replica that does not go) starts the
// controller again: the uninstall stops, and the platform runs as it did.
func TestAFailedReleaseStartsTheControllerAgain(t *testing.T) {
	g := NewWithT(t)
	ns := releaseNamespace(t, "release-restart")
	d := controllerDeployment(t, ns, "keelson-workload-sizer")
	pod(t, ns, "keelson-workload-sizer-abc", map[string]string{"app": d.Name})
	held := workloadSizer(t, ns, "held", sizerFinalizer)
	clearFinalizersAtEnd(t, held)

	out, code := releaseFinalizers(ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=2s")
	g.Expect(code).To(Equal(1), out)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), d)).To(Succeed())
	g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)), "the controller is left stopped:\n%s", out)
	g.Expect(out).To(ContainSubstring("back to 2"))
	g.Expect(finalizersOf(g, held)).To(Equal([]string{sizerFinalizer}))

	// A try that finds the controller already at 0 (an earlier one was killed before it could start it again)
	// gives it the chart's replicas.
	key := client.ObjectKeyFromObject(d)
	g.Expect(env.Client.SubResource("scale").Patch(context.Background(), d.DeepCopy(),
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`)))).To(Succeed())
	out, code = releaseFinalizers(ns, "--release-finalizers="+key.Name, "--release-finalizers-timeout=2s",
		"--release-finalizers-replicas=3")
	g.Expect(code).To(Equal(1), out)
	g.Expect(env.Client.Get(context.Background(), key, d)).To(Succeed())
	g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)), out)
}

// With the controller's Deployment already gone (a GitOps tool deleted the release before its hook ran), there is
// nothing to stop, and the finalizers are released all the same.
func TestReleaseFinalizersWithTheControllerAlreadyGone(t *testing.T) {
	g := NewWithT(t)
	ns := releaseNamespace(t, "release-gone")
	obj := workloadSizer(t, ns, "left", sizerFinalizer)
	clearFinalizersAtEnd(t, obj)
	out, code := releaseFinalizers(ns, "--release-finalizers=keelson-workload-sizer", "--release-finalizers-timeout=30s")
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("no controller to stop"))
	g.Expect(finalizersOf(g, obj)).To(BeEmpty(), out)
}

// The controllers' hooks run one after the other: when a later one fails, the earlier one has stopped its
// controller already. The failed hook starts every such controller again (one still running is left alone), so a
// stopped uninstall leaves the whole platform running.
func TestAFailedReleaseStartsTheOtherStoppedControllersToo(t *testing.T) {
	g := NewWithT(t)
	ns := releaseNamespace(t, "release-others")
	d := controllerDeployment(t, ns, "keelson-workload-sizer")
	pod(t, ns, "keelson-workload-sizer-abc", map[string]string{"app": d.Name}) // never goes: the hook fails
	stopped := controllerDeployment(t, ns, "keelson-pipeline-controller")
	g.Expect(env.Client.SubResource("scale").Patch(context.Background(), stopped.DeepCopy(),
		client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`)))).To(Succeed())
	running := controllerDeployment(t, ns, "keelson-other")

	out, code := releaseFinalizers(ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=2s",
		"--release-finalizers-also=keelson-pipeline-controller=2,keelson-other=5")
	g.Expect(code).To(Equal(1), out)
	for name, want := range map[string]int32{"keelson-pipeline-controller": 2, "keelson-other": 2, d.Name: 2} {
		var got appsv1.Deployment
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got)).To(Succeed())
		g.Expect(got.Spec.Replicas).To(HaveValue(Equal(want)), "%s:\n%s", name, out)
	}
	_ = running
}
