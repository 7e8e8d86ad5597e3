//go:build integration

package charts_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// The chart's tests that start processes: a real apiserver for a server-side dry run, and the pinned helm binary.

var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		_ = env.Stop()
	}
	os.Exit(code)
}

// The default render is accepted by a real apiserver, server-side, into a namespace that enforces (and warns about)
// Pod Security "restricted": no error and no warning.
func TestServerSideDryRunUnderRestrictedPodSecurity(t *testing.T) {
	g := NewWithT(t)
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{}) })
	g.Expect(envErr).NotTo(HaveOccurred())
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted",
		"pod-security.kubernetes.io/audit": "restricted"}}}
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, ns))).To(Succeed())

	w := &testenv.Warnings{}
	cfg := *env.Config
	cfg.WarningHandlerWithContext = w
	c, err := client.New(&cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	objs := mustRender(t, nil)
	g.Expect(len(objs)).To(BeNumerically(">", 30))
	for _, u := range objs {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("chart-test"),
			client.ForceOwnership, client.DryRunAll)
		g.Expect(err).NotTo(HaveOccurred(), "%s %s", u.GetKind(), u.GetName())
	}
	g.Expect(w.All()).To(BeEmpty(), "warnings from the apiserver")
}

// helm lint --strict passes with the pinned helm (skipped only when the binary is not installed: make test installs it).
func TestHelmLintStrict(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := testenv.PinnedVersion(root, "HELM_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	helm := fmt.Sprintf("%s/bin/helm-%s", root, version)
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing: run make test (it installs the pinned helm)", helm)
	}
	out, err := runCmd(helm, "lint", "--strict", chartDir)
	if err != nil || !strings.Contains(out, "0 chart(s) failed") {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func runCmd(name string, args ...string) (string, error) {
	var buf bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

// Each controller's ClusterRole is exactly what its code uses (a change to a kubebuilder marker must change this
// table too, so widened permissions are reviewed). Keys are "group/resource", values the verbs.
