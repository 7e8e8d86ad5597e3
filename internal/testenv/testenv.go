// Package testenv is Keelson's shared integration-test harness: a real kube-apiserver and etcd (envtest) with the
// generated CRDs installed, optional admission webhooks served in-process, and a controller-runtime manager running
// inside the test. A package's TestMain starts one Env; each test starts the managers it needs.
//
// The binaries come from KUBEBUILDER_ASSETS, or from bin/k8s/<KUBE_VERSION>/ where `make test` installs them.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// Options say what an Env serves.
type Options struct {
	// AddToScheme registers API groups beyond the built-in Kubernetes ones on the Env's scheme.
	AddToScheme []func(*runtime.Scheme) error
	// WebhookManifests are repository-relative paths of generated webhook configurations to install; the webhooks
	// are then served by a manager started with StartManager.
	WebhookManifests []string
}

// Env is a running control plane for tests.
type Env struct {
	// Config reaches the apiserver as a cluster admin.
	Config *rest.Config
	// Client is an uncached client with Scheme.
	Client client.Client
	// Scheme knows the built-in kinds and the Options' API groups.
	Scheme *runtime.Scheme
	// Root is the repository's root directory.
	Root string

	env *envtest.Environment
}

// CRDDir is where `make manifests` writes the CRDs, relative to the repository root.
const CRDDir = "charts/keelson/files/crds"

// Start boots kube-apiserver and etcd, installs every generated CRD and the requested webhook configurations, and
// returns once the apiserver answers. Call Stop when done (in TestMain, after m.Run).
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, opts.AddToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the test scheme: %w", err)
		}
	}
	webhooks, err := loadWebhookManifests(root, opts.WebhookManifests)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, CRDDir)},
		// No CRDs yet is fine (a group-version without kinds); a wrong path is not, and would fail below.
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		WebhookInstallOptions:    webhooks,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		// A start that failed after the control plane came up (a CRD or webhook configuration refused) leaves it
		// running: stop it, or its kube-apiserver and etcd outlive the tests.
		_ = env.Stop()
		return nil, fmt.Errorf("starting envtest with binaries from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating the test client: %w", err)
	}
	if err := installPolicies(c, filepath.Join(root, PolicyDir)); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Root: root, env: env}, nil
}

// PolicyDir holds the admission policies the chart installs beside the CRDs (charts/keelson/files/policies).
const PolicyDir = "charts/keelson/files/policies"

// installPolicies creates every admission policy and binding in dir, as the chart installs them: the apiserver
// enforces them itself, with or without the controllers' webhooks.
func installPolicies(c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading admission policies: %w", err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return fmt.Errorf("decoding %s: %w", path, err)
			}
			var obj client.Object
			switch meta.Kind {
			case "ValidatingAdmissionPolicy":
				obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			case "ValidatingAdmissionPolicyBinding":
				obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			default:
				continue
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				return fmt.Errorf("decoding %s: %w", path, err)
			}
			if err := c.Create(context.Background(), obj); err != nil {
				return fmt.Errorf("installing %s %s: %w", meta.Kind, obj.GetName(), err)
			}
		}
	}
	return nil
}

// loadWebhookManifests reads the generated webhook configurations at the repository-relative paths and names each
// after its file: controller-gen names every binary's configurations alike (mutating-webhook-configuration), and
// installed side by side the last would replace the others, leaving those binaries' webhooks uncalled.
func loadWebhookManifests(root string, paths []string) (envtest.WebhookInstallOptions, error) {
	var opts envtest.WebhookInstallOptions
	for _, p := range paths {
		f, err := os.Open(filepath.Join(root, p))
		if err != nil {
			return opts, fmt.Errorf("reading webhook manifest: %w", err)
		}
		prefix := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)) + "-"
		reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = f.Close()
				return opts, fmt.Errorf("reading %s: %w", p, err)
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				_ = f.Close()
				return opts, fmt.Errorf("decoding %s: %w", p, err)
			}
			switch meta.Kind {
			case "MutatingWebhookConfiguration":
				var c admissionregistrationv1.MutatingWebhookConfiguration
				err = yaml.UnmarshalStrict(doc, &c)
				c.Name = prefix + c.Name
				opts.MutatingWebhooks = append(opts.MutatingWebhooks, &c)
			case "ValidatingWebhookConfiguration":
				var c admissionregistrationv1.ValidatingWebhookConfiguration
				err = yaml.UnmarshalStrict(doc, &c)
				c.Name = prefix + c.Name
				opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, &c)
			}
			if err != nil {
				_ = f.Close()
				return opts, fmt.Errorf("decoding %s: %w", p, err)
			}
		}
		_ = f.Close()
	}
	return opts, nil
}

// Stop shuts the control plane down and removes its data.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// WriteKubeconfig writes a cluster-admin kubeconfig for this Env to path, for child processes under test.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "keelson-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a test user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the test kubeconfig: %w", err)
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}

// WriteKubeconfigAs writes a kubeconfig for a user that belongs to no privileged group: what it may do is what
// the test binds to it with RBAC, as a controller's ServiceAccount may do what its roles grant.
func (e *Env) WriteKubeconfigAs(path, name string) error {
	user, err := e.env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return fmt.Errorf("adding user %s: %w", name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig of %s: %w", name, err)
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}

// RepoRoot finds the repository root by walking up from the working directory (go test runs in the package's
// directory) to the folder that holds tools/versions.env.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "versions.env")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: not inside the keelson repository (no tools/versions.env above the working directory)")
		}
		dir = parent
	}
}

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when set, else the pinned
// build under bin/. It fails with what to run when neither has them.
func AssetsDir(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, checkAssets(dir)
	}
	version, err := PinnedVersion(root, "KUBE_VERSION")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "k8s", version)
	return dir, checkAssets(dir)
}

func checkAssets(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("testenv: %s not found in %s: run `make test` (it installs the pinned binaries) "+
				"or set KUBEBUILDER_ASSETS", name, dir)
		}
	}
	return nil
}

// PinnedVersion reads one KEY=value pin from tools/versions.env.
func PinnedVersion(root, key string) (string, error) {
	f, err := os.Open(filepath.Join(root, "tools", "versions.env"))
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && k == key {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("testenv: %s is not pinned in tools/versions.env", key)
}
