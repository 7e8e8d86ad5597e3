//go:build integration

package manager_test

// The --release-finalizers mode (the chart's pre-delete hook), run as the real workload-sizer binary against an
// envtest apiserver with the CRDs installed.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	sizerFinalizer = "sizer.keelson.dev/release"
	otherFinalizer = "example.com/keep"
)

// releaseNamespace creates a namespace for one test and deletes it when the test ends.
func releaseNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return name
}

// controllerDeployment creates a Deployment standing in for the controller's, selecting app=<name>.
func controllerDeployment(t *testing.T, namespace, name string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "controller"}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// pod creates a pod with labels; no kubelet runs in envtest, so it stays until deleted.
func pod(t *testing.T, namespace, name string, labels map[string]string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// workloadSizer creates a WorkloadSizer carrying finalizers.
func workloadSizer(t *testing.T, namespace, name string, finalizers ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sizer.keelson.dev/v1alpha1",
		"kind":       "WorkloadSizer",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       map[string]any{"targetRef": map[string]any{"kind": "Deployment", "name": "missing"}, "size": int64(0)},
	}}
	u.SetFinalizers(finalizers)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// clearFinalizersAtEnd takes every finalizer off obj when the test ends, so its namespace can go.
func clearFinalizersAtEnd(t *testing.T, obj client.Object) {
	t.Cleanup(func() {
		_ = env.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})
}

// finalizersOf reads an object's finalizers again; a deleted object has none.
func finalizersOf(g Gomega, obj *unstructured.Unstructured) []string {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
	if client.IgnoreNotFound(err) != nil {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return got.GetFinalizers()
}

// releaseFinalizers runs the workload-sizer binary in --release-finalizers mode as if in namespace.
func releaseFinalizers(namespace string, extra ...string) (string, int) {
	args := append([]string{"--kubeconfig=" + kubeconfig}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "workload-sizer"), args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+namespace)
	out, _ := cmd.CombinedOutput()
	return string(out), cmd.ProcessState.ExitCode()
}

// The hook's mode stops the controller's Deployment, then takes the sizer's finalizer, and only that one, off every
// WorkloadSizer in every namespace; a pod that is not the Deployment's (the hook's own) does not hold it up.
func TestReleaseFinalizersStopsTheControllerAndReleasesEveryObject(t *testing.T) {
	g := NewWithT(t)
	ns := releaseNamespace(t, "release-ok")
	other := releaseNamespace(t, "release-ok-users")
	d := controllerDeployment(t, ns, "keelson-workload-sizer")
	pod(t, ns, "the-hook", map[string]string{"app": "keelson-workload-sizer-uninstall"})
	both := workloadSizer(t, other, "both", sizerFinalizer, otherFinalizer)
	ours := workloadSizer(t, other, "ours", sizerFinalizer)
	deleting := workloadSizer(t, ns, "deleting", sizerFinalizer)
	g.Expect(env.Client.Delete(context.Background(), deleting)).To(Succeed())

	out, code := releaseFinalizers(ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=30s")
	g.Expect(code).To(Equal(0), out)

	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), d)).To(Succeed())
	g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(0)), "the controller's Deployment is scaled to 0")
	g.Expect(finalizersOf(g, both)).To(Equal([]string{otherFinalizer}), "only the sizer's finalizer is removed")
	g.Expect(finalizersOf(g, ours)).To(BeEmpty())
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(deleting), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sizer.keelson.dev/v1alpha1", "kind": "WorkloadSizer"}})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "a WorkloadSizer being deleted is gone once released")
	g.Expect(out).To(ContainSubstring("Scaled Deployment " + ns + "/" + d.Name + " to 0"))
	g.Expect(out).To(ContainSubstring("Removed finalizer " + sizerFinalizer + " from WorkloadSizer " + other + "/both"))

	// Run again (a retried hook): nothing is left to do, and that is a success.
	out, code = releaseFinalizers(ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=30s")
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("Released 0 of"))
}

// While a pod of the controller's Deployment remains, no finalizer is touched (that replica could add it back), and
// the mode gives up at its deadline with an error that names the pod.
func TestReleaseFinalizersWaitsForTheControllersPods(t *testing.T) {
	g := NewWithT(t)
	ns := releaseNamespace(t, "release-wait")
	d := controllerDeployment(t, ns, "keelson-workload-sizer")
	pod(t, ns, "keelson-workload-sizer-abc", map[string]string{"app": d.Name})
	held := workloadSizer(t, ns, "held", sizerFinalizer)
	clearFinalizersAtEnd(t, held)

	out, code := releaseFinalizers(ns, "--release-finalizers="+d.Name, "--release-finalizers-timeout=3s")
	g.Expect(code).To(Equal(1), out)
	g.Expect(out).To(ContainSubstring("keelson-workload-sizer-abc"))
	g.Expect(finalizersOf(g, held)).To(Equal([]string{sizerFinalizer}))
}

// Without a namespace to find the Deployment in, the mode refuses to guess.
func TestReleaseFinalizersNeedsItsNamespace(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "pipeline-controller"), "--kubeconfig="+kubeconfig, "--release-finalizers=x")
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "POD_NAMESPACE") {
		t.Fatalf("exit code %d, want 1 naming POD_NAMESPACE; output:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
