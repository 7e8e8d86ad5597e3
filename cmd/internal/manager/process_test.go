//go:build integration

package manager_test

// These tests build the three real binaries and run them as processes against an envtest apiserver: what a user
// gets from `--help` and `--version`, the probes, the metrics guard, and leader election handover on SIGTERM.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// testVersion is stamped into the test builds to prove the stamping works.
const testVersion = "v9.9.9-test"

var (
	env        *testenv.Env
	binDir     string
	kubeconfig string
	binaries   = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if binDir, err = os.MkdirTemp("", "keelson-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kubeconfig = filepath.Join(binDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	args := []string{"build", "-o", binDir + "/",
		"-ldflags", "-X github.com/keelson-dev/keelson/cmd/internal/version.Version=" + testVersion}
	for _, b := range binaries {
		args = append(args, "github.com/keelson-dev/keelson/cmd/"+b)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is one running binary.
type process struct {
	cmd       *exec.Cmd
	output    *syncBuffer
	probeAddr string
	exited    chan struct{} // closed when the process has exited
	err       error         // Wait's result, set before exited is closed
}

// exitedCleanly reports whether the process has exited with status 0.
func (p *process) exitedCleanly() bool {
	select {
	case <-p.exited:
		return p.err == nil
	default:
		return false
	}
}

// freeAddr returns a loopback address with a port nothing listens on right now. The port is drawn below Linux's
// ephemeral range (32768 and up), which the kernel hands out for outgoing connections and ":0" listeners, so no
// other process can take it between this check and the binary binding it.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if l, err := net.Listen("tcp", addr); err == nil {
			_ = l.Close()
			return addr
		}
	}
	t.Fatal("no free port found")
	return ""
}

// start runs binary with the test kubeconfig, its own probe port and extra flags, and kills it when the test ends.
func start(t *testing.T, binary string, extra ...string) *process {
	t.Helper()
	p := &process{output: &syncBuffer{}, probeAddr: freeAddr(t), exited: make(chan struct{})}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=" + p.probeAddr,
		"--leader-election-namespace=default",
		"--webhook-port=" + strings.Split(freeAddr(t), ":")[1],
	}
	if !slices.ContainsFunc(extra, func(a string) bool {
		return strings.HasPrefix(a, "--webhook-cert-dir") || strings.HasPrefix(a, "--webhook-cert-rotation")
	}) {
		args = append(args, "--enable-webhooks=false") // no serving certificate unless the test makes one
	}
	args = append(args, extra...)
	p.cmd = exec.Command(filepath.Join(binDir, binary), args...)
	p.cmd.Env = append(os.Environ(), "POD_NAMESPACE=default")
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s output:\n%s", binary, p.output.String())
		}
	})
	return p
}

// leads reports whether the process has logged that it became the leader.
func (p *process) leads() bool { return strings.Contains(p.output.String(), "Became the leader") }

func (p *process) get(path string) (int, error) {
	resp, err := http.Get("http://" + p.probeAddr + path)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func TestHelpListsEveryFlag(t *testing.T) {
	flags := []string{"metrics-bind-address", "metrics-secure", "health-probe-bind-address", "leader-elect",
		"leader-election-namespace", "leader-election-id", "leader-election-lease-duration",
		"leader-election-renew-deadline", "leader-election-retry-period", "enable-webhooks", "webhook-port",
		"webhook-cert-dir", "log-level", "log-format", "kubeconfig", "concurrency", "kube-api-qps",
		"kube-api-burst", "graceful-shutdown-timeout", "version", "webhook-cert-rotation", "webhook-cert-secret",
		"webhook-service-name", "webhook-configuration-name", "check-ready-url",
		"release-finalizers", "release-finalizers-timeout", "metrics-webhook-cert"}
	for _, b := range binaries {
		out, err := exec.Command(filepath.Join(binDir, b), "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v", b, err)
		}
		for _, f := range flags {
			if !strings.Contains(string(out), "-"+f+" ") && !strings.Contains(string(out), "-"+f+"\n") {
				t.Errorf("%s --help does not list --%s", b, f)
			}
		}
	}
}

func TestVersionIsStamped(t *testing.T) {
	for _, b := range binaries {
		out, err := exec.Command(filepath.Join(binDir, b), "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", b, err)
		}
		if !strings.HasPrefix(string(out), b+" "+testVersion) {
			t.Errorf("%s --version printed %q, want it to start with %q", b, out, b+" "+testVersion)
		}
	}
}

// --check-ready-url (the chart's helm test) exits 0 on a ready endpoint and 1 otherwise.
func TestCheckReadyURL(t *testing.T) {
	p := start(t, "pipeline-controller", "--metrics-bind-address=0", "--leader-election-id=check-ready")
	g := NewWithT(t)
	g.Eventually(func() (int, error) { return p.get("/readyz") }, 30*time.Second, 50*time.Millisecond).Should(Equal(http.StatusOK))
	bin := filepath.Join(binDir, "pipeline-controller")
	g.Expect(exec.Command(bin, "--check-ready-url=http://"+p.probeAddr+"/readyz").Run()).To(Succeed())
	err := exec.Command(bin, "--check-ready-url=http://"+p.probeAddr+"/no-such-check").Run()
	g.Expect(err).To(HaveOccurred(), "a failing endpoint must exit non-zero")
}

func TestInvalidFlagsExitWithUsageError(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "workload-sizer"), "--log-format=xml", "--concurrency=0")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("exit code %d, want 2; output:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	for _, f := range []string{"--log-format", "--concurrency"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("the error does not name %s:\n%s", f, out)
		}
	}
}

// Each binary, started against a real apiserver, elects itself, serves /healthz and /readyz, and exits cleanly on
// SIGTERM.
func TestEachBinaryLeadsAndServesProbes(t *testing.T) {
	for _, b := range binaries {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			p := start(t, b, "--metrics-bind-address=0", "--leader-election-id="+b+"-probes")
			g.Eventually(p.leads, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
			for _, path := range []string{"/healthz", "/readyz"} {
				g.Eventually(func() (int, error) { return p.get(path) }, 10*time.Second, 50*time.Millisecond).
					Should(Equal(http.StatusOK), path)
			}
			g.Expect(p.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
			g.Eventually(p.exitedCleanly, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "clean exit after SIGTERM")
		})
	}
}

// With webhooks on, /readyz waits for the webhook server too, and the server answers over TLS.
func TestReadyzIncludesTheWebhookServer(t *testing.T) {
	g := NewWithT(t)
	certDir := t.TempDir()
	writeSelfSignedCert(t, certDir)
	webhookPort := strings.Split(freeAddr(t), ":")[1]
	p := start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id=webhook-ready",
		"--webhook-cert-dir="+certDir, "--webhook-port="+webhookPort)
	g.Eventually(func() (int, error) { return p.get("/readyz/webhooks") }, 30*time.Second, 50*time.Millisecond).
		Should(Equal(http.StatusOK))
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own self-signed certificate
	}}
	resp, err := httpClient.Get("https://127.0.0.1:" + webhookPort + "/validate-daemonset-keelson-dev-v1alpha1-daemonset")
	g.Expect(err).NotTo(HaveOccurred())
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(err).NotTo(HaveOccurred())
	// The validating webhook answers: an empty review comes back as an AdmissionReview refusing it.
	g.Expect(string(body)).To(ContainSubstring("request body is empty"))
}

// rotationFixture is what the chart creates for the own-CA mode: the empty certificate Secret and the two webhook
// configurations without a CA bundle, named uniquely (the apiserver outlives a test run with -count).
type rotationFixture struct {
	suffix string
	secret *corev1.Secret
	vwc    *admissionregistrationv1.ValidatingWebhookConfiguration
	mwc    *admissionregistrationv1.MutatingWebhookConfiguration
}

func newRotationFixture(t *testing.T) *rotationFixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	suffix := fmt.Sprint(rand.IntN(1 << 30))
	name := "keelson-daemonset-controller-" + suffix
	f := &rotationFixture{suffix: suffix,
		secret: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook-tls-" + suffix, Namespace: "default"}}}
	hook := func(path string) (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations) {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "default", Name: "daemonset-controller", Path: &path}},
			[]admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"daemonset.keelson.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"daemonsets"}}}}
	}
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	vcc, rules := hook("/validate")
	f.vwc = &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.keelson.dev", ClientConfig: vcc, Rules: rules,
			SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}}}}
	mcc, _ := hook("/mutate")
	f.mwc = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.keelson.dev", ClientConfig: mcc, Rules: rules,
			SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}}}}
	for _, o := range []client.Object{f.secret, f.vwc, f.mwc} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	return f
}

// start runs the daemonset-controller in the own-CA mode on webhookPort, with a cert dir nothing is ever written
// to: the certificate must come from the Secret, not from a mounted file.
func (f *rotationFixture) start(t *testing.T, webhookPort string) *process {
	return start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id=rotation-"+f.suffix,
		"--webhook-cert-rotation", "--webhook-cert-dir="+t.TempDir(), "--webhook-port="+webhookPort,
		"--webhook-cert-secret="+f.secret.Name, "--webhook-configuration-name="+f.vwc.Name)
}

// trustedHandshake completes a TLS handshake with the webhook server on port and checks the served certificate,
// for the Service's DNS name, against every CA bundle of both configurations as they are now: what the apiserver
// does before each admission call.
func (f *rotationFixture) trustedHandshake(port string) error {
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.vwc), f.vwc); err != nil {
		return err
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.mwc), f.mwc); err != nil {
		return err
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{
		InsecureSkipVerify: true, // verified below against each bundle, as the apiserver would
	})
	if err != nil {
		return err
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	_ = conn.Close()
	bundles := [][]byte{f.vwc.Webhooks[0].ClientConfig.CABundle, f.mwc.Webhooks[0].ClientConfig.CABundle}
	for i, b := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("bundle %d holds no certificate", i)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "daemonset-controller.default.svc", Roots: pool}); err != nil {
			return fmt.Errorf("bundle %d: %w", i, err)
		}
	}
	return nil
}

// With --webhook-cert-rotation the binary runs its own CA: it fills the Secret the chart creates empty, injects the
// CA into its webhook configurations, and serves a certificate for its Service's name signed by that CA. It does so
// in seconds: the certificate goes from the Secret to the TLS handshake in memory, with nothing mounted.
func TestWebhookIsTrustedSecondsAfterStart(t *testing.T) {
	g := NewWithT(t)
	f := newRotationFixture(t)
	webhookPort := strings.Split(freeAddr(t), ":")[1]
	started := time.Now()
	p := f.start(t, webhookPort)
	g.Eventually(func() error { return f.trustedHandshake(webhookPort) }, 60*time.Second, 20*time.Millisecond).
		Should(Succeed())
	took := time.Since(started)
	t.Logf("a handshake the CA bundles trust %s after the process started", took.Round(time.Millisecond))
	g.Expect(took).To(BeNumerically("<", 10*time.Second), "the webhook took minutes, not seconds")
	g.Eventually(func() (int, error) { return p.get("/readyz/webhooks") }, 5*time.Second, 20*time.Millisecond).
		Should(Equal(http.StatusOK))

	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.secret), f.secret)).To(Succeed())
	g.Expect(f.vwc.Webhooks[0].ClientConfig.CABundle).To(Equal(f.secret.Data["ca.crt"]))
	g.Expect(f.mwc.Webhooks[0].ClientConfig.CABundle).To(Equal(f.secret.Data["ca.crt"]))
}

// A CA bundle someone wipes (an apply of the configuration without it) is written back within seconds: the process
// watches its webhook configurations by name instead of polling them.
func TestWipedCABundleIsRepairedInSeconds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newRotationFixture(t)
	webhookPort := strings.Split(freeAddr(t), ":")[1]
	f.start(t, webhookPort)
	g.Eventually(func() error { return f.trustedHandshake(webhookPort) }, 60*time.Second, 20*time.Millisecond).
		Should(Succeed())

	for _, wipe := range []struct {
		do     func() error
		bundle func() []byte // the wiped bundle, as the update answered
		want   []byte
	}{
		{func() error { f.vwc.Webhooks[0].ClientConfig.CABundle = nil; return env.Client.Update(ctx, f.vwc) },
			func() []byte { return f.vwc.Webhooks[0].ClientConfig.CABundle }, nil},
		{func() error {
			f.mwc.Webhooks[0].ClientConfig.CABundle = []byte("garbage")
			return env.Client.Update(ctx, f.mwc)
		},
			func() []byte { return f.mwc.Webhooks[0].ClientConfig.CABundle }, []byte("garbage")},
	} {
		g.Expect(wipe.do()).To(Succeed())
		wiped := time.Now()
		g.Expect(wipe.bundle()).To(Equal(wipe.want), "the wipe did not take")
		g.Eventually(func() error { return f.trustedHandshake(webhookPort) }, 30*time.Second, 20*time.Millisecond).
			Should(Succeed())
		took := time.Since(wiped)
		t.Logf("the bundle was repaired %s after the wipe", took.Round(time.Millisecond))
		g.Expect(took).To(BeNumerically("<", 5*time.Second), "repaired by a poll, not on the change")
	}
}

// writeSelfSignedCert writes tls.crt and tls.key for 127.0.0.1 into dir.
func writeSelfSignedCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "keelson-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// /metrics is served over HTTPS and only to a caller whose Kubernetes token may GET /metrics.
func TestMetricsRequireAuthorizedToken(t *testing.T) {
	g := NewWithT(t)
	metricsAddr := freeAddr(t)
	// --metrics-webhook-cert without webhooks (start turns them off): the server keeps its self-signed certificate.
	p := start(t, "daemonset-controller", "--metrics-bind-address="+metricsAddr, "--leader-election-id=metrics-test",
		"--metrics-webhook-cert")
	g.Eventually(p.leads, 30*time.Second, 50*time.Millisecond).Should(BeTrue())

	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the server's certificate is self-signed
	}}
	scrape := func(token string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	g.Eventually(func() (int, error) { return scrape("") }, 15*time.Second, 100*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "anonymous scrape")

	allowed := serviceAccountToken(t, "metrics-reader", true)
	denied := serviceAccountToken(t, "metrics-nobody", false)
	g.Expect(scrape(denied)).To(Equal(http.StatusForbidden), "token without the /metrics permission")
	g.Expect(scrape(allowed)).To(Equal(http.StatusOK), "token allowed to GET /metrics")
}

// serviceAccountToken creates a service account (bound to a /metrics reader role when allowed) and returns a token.
func serviceAccountToken(t *testing.T, name string, allowed bool) string {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	g.Expect(env.Client.Create(ctx, sa)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sa) })
	if allowed {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}
		g.Expect(env.Client.Create(ctx, role)).To(Succeed())
		g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), binding)
			_ = env.Client.Delete(context.Background(), role)
		})
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// Two replicas of one binary: exactly one leads; SIGTERM to the leader hands the lease to the other within the
// follower's next try (at most 2.2 retry periods of 1s, as client-go jitters them), because the leader releases the
// lease on shutdown instead of letting it expire (which takes the 15s lease duration).
func TestLeaderHandoverOnSIGTERM(t *testing.T) {
	g := NewWithT(t)
	const lease = "handover-test"
	a := start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id="+lease)
	b := start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id="+lease)

	g.Eventually(func() bool { return a.leads() || b.leads() }, 30*time.Second, 20*time.Millisecond).Should(BeTrue())
	// Both are running and ready; the follower must stay a follower while the leader renews.
	for _, p := range []*process{a, b} {
		g.Eventually(func() (int, error) { return p.get("/readyz") }, 10*time.Second, 50*time.Millisecond).
			Should(Equal(http.StatusOK))
	}
	g.Consistently(func() bool { return a.leads() && b.leads() }, 3*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "both replicas claim leadership")
	leader, follower := a, b
	if b.leads() {
		leader, follower = b, a
	}
	// Warmup: the follower has started its controller's informers already, so it can reconcile the moment it leads.
	g.Expect(follower.output.String()).To(ContainSubstring("Starting EventSource"), "the follower's caches are warm")
	var l coordinationv1.Lease
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: lease}, &l)).To(Succeed())
	g.Expect(l.Spec.HolderIdentity).NotTo(BeNil())

	sent := time.Now()
	g.Expect(leader.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(follower.leads, 5*time.Second, 10*time.Millisecond).Should(BeTrue())
	handover := time.Since(sent)
	t.Logf("lease handed over %s after SIGTERM", handover)
	g.Expect(handover).To(BeNumerically("<", 3*time.Second), "handover took longer than the follower's next try")
	g.Eventually(leader.exitedCleanly, 10*time.Second, 20*time.Millisecond).Should(BeTrue(), "old leader exits cleanly")
}

// After SIGTERM the leader releases its lease at once, yet its webhook server keeps answering for the drain period:
// admission calls still routed to it while its endpoint leaves the Service are answered, not refused.
func TestWebhookServerDrainsAfterSIGTERM(t *testing.T) {
	g := NewWithT(t)
	const lease = "drain-test"
	certDir := t.TempDir()
	writeSelfSignedCert(t, certDir)
	port := strings.Split(freeAddr(t), ":")[1]
	a := start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id="+lease,
		"--webhook-cert-dir="+certDir, "--webhook-port="+port, "--webhook-drain-duration=4s")
	g.Eventually(a.leads, 30*time.Second, 20*time.Millisecond).Should(BeTrue())
	// The follower retries often, so the time it takes to notice the freed lease (client-go waits up to 2.2 retry
	// periods between tries) is small beside the drain: what is measured is whether the drain holds the lease.
	b := start(t, "daemonset-controller", "--metrics-bind-address=0", "--leader-election-id="+lease,
		"--webhook-cert-dir="+certDir, "--webhook-drain-duration=4s", "--leader-election-retry-period=200ms")
	g.Eventually(func() (int, error) { return a.get("/readyz/webhooks") }, 30*time.Second, 50*time.Millisecond).
		Should(Equal(http.StatusOK))
	g.Eventually(func() (int, error) { return b.get("/readyz") }, 30*time.Second, 50*time.Millisecond).
		Should(Equal(http.StatusOK))
	answers := func() error {
		httpClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own self-signed certificate
		}}
		resp, err := httpClient.Get("https://127.0.0.1:" + port + "/validate-daemonset-keelson-dev-v1alpha1-daemonset")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	g.Expect(answers()).To(Succeed())

	sent := time.Now()
	g.Expect(a.cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(b.leads, 5*time.Second, 10*time.Millisecond).Should(BeTrue())
	t.Logf("lease handed over %s after SIGTERM", time.Since(sent))
	g.Expect(time.Since(sent)).To(BeNumerically("<", 2*time.Second), "the drain must not hold the lease")
	g.Expect(answers()).To(Succeed(), "the old leader's webhook server answers after the lease has moved")
	g.Expect(a.exitedCleanly()).To(BeFalse(), "the old leader is still draining")
	g.Eventually(a.exitedCleanly, 15*time.Second, 20*time.Millisecond).Should(BeTrue(), "clean exit after the drain")
	g.Expect(time.Since(sent)).To(BeNumerically(">=", 4*time.Second), "exited before the drain period ended")
	g.Expect(a.output.String()).To(ContainSubstring("Draining the webhook server"))
}
