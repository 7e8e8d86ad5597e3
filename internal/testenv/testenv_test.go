//go:build integration

package testenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/keelson-dev/keelson/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// A controller started with StartManager reconciles objects the test creates.
func TestStartManagerRunsControllers(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	env.StartManager(t, testenv.ManagerOptions{Setup: func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).Named("configmap-recorder").For(&corev1.ConfigMap{}).
			Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				seen[req.String()] = true
				return reconcile.Result{}, nil
			}))
	}})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"}}
	g.Expect(env.Client.Create(context.Background(), cm)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
	g.Eventually(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["default/probe"]
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
}

// The kubeconfig written for child processes reaches the same apiserver with admin rights.
func TestWriteKubeconfig(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(path)).To(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	var ns corev1.Namespace
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, &ns)).To(Succeed())
}

func TestAssetsDirExplainsWhatToRun(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := testenv.AssetsDir(env.Root)
	if err == nil || !strings.Contains(err.Error(), "make test") {
		t.Fatalf("AssetsDir on an empty directory: got %v, want an error that says to run make test", err)
	}
}

func TestPinnedVersion(t *testing.T) {
	v, err := testenv.PinnedVersion(env.Root, "KUBE_VERSION")
	if err != nil || !strings.HasPrefix(v, "v1.") {
		t.Fatalf("PinnedVersion(KUBE_VERSION) = %q, %v; want a v1.x version", v, err)
	}
	if _, err := testenv.PinnedVersion(env.Root, "NO_SUCH_TOOL"); err == nil {
		t.Fatal("PinnedVersion of an unknown key succeeded")
	}
}
