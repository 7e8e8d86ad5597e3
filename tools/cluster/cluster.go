package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// Cluster is one local cluster: where its files live and how it is addressed.
type Cluster struct {
	// L is where its files live.
	L Layout
	// S is how it is addressed.
	S Settings
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// etcd's ports sit away from the default 2379 so that a developer's own etcd keeps working.
const (
	etcdClientURL = "http://127.0.0.1:12379"
	etcdPeerURL   = "http://127.0.0.1:12380"
)

// procOrder is the start order; teardown stops in reverse, after the kubelet (which would restart containers).
var procOrder = []string{"containerd", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kwok"}

// procs returns every host process of the cluster with its flags.
func (c *Cluster) procs() map[string]Proc {
	l, s, p := c.L, c.S, c.L.PKIDir()
	pki := func(f string) string { return filepath.Join(p, f) }
	kc := func(name string) []string {
		return []string{"--kubeconfig=" + pki(name+".kubeconfig"), "--authentication-kubeconfig=" + pki(name+".kubeconfig"),
			"--authorization-kubeconfig=" + pki(name+".kubeconfig")}
	}
	return map[string]Proc{
		"containerd": {Name: "containerd", Path: "containerd", Args: []string{"--config", l.EtcFile(containerdConfig)}},
		"etcd": {Name: "etcd", Path: l.Bin("etcd"), Args: []string{"--name=keelson", "--data-dir=" + l.EtcdData(),
			"--listen-client-urls=" + etcdClientURL, "--advertise-client-urls=" + etcdClientURL,
			"--listen-peer-urls=" + etcdPeerURL, "--initial-advertise-peer-urls=" + etcdPeerURL,
			"--initial-cluster=keelson=" + etcdPeerURL, "--unsafe-no-fsync", "--quota-backend-bytes=4294967296", "--log-level=warn"}},
		"kube-apiserver": {Name: "kube-apiserver", Path: l.Bin("kube-apiserver"), Args: []string{
			"--etcd-servers=" + etcdClientURL, "--advertise-address=" + s.HostIP, "--bind-address=0.0.0.0",
			"--secure-port=" + strconv.Itoa(s.APIPort), "--service-cluster-ip-range=" + s.ServiceCIDR,
			"--allow-privileged=true", "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
			"--client-ca-file=" + pki("ca.crt"), "--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
			// The node's name does not resolve on the host: logs, exec and debug reach the kubelet by its IP.
			"--kubelet-preferred-address-types=InternalIP,Hostname", "--service-account-key-file=" + pki("sa.pub"),
			"--service-account-signing-key-file=" + pki("sa.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			// Blocking: a request waits until its event is written, so a burst cannot overflow a buffer and
			// drop events the benchmarks count (batch mode drops them).
			"--audit-policy-file=" + l.EtcFile(auditPolicy), "--audit-log-path=" + l.AuditLog(),
			"--audit-log-mode=blocking", "--audit-log-maxsize=500", "--audit-log-maxbackup=3", "--profiling=false"}},
		"kube-controller-manager": {Name: "kube-controller-manager", Path: l.Bin("kube-controller-manager"), Args: append(kc("kcm"),
			"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
			"--use-service-account-credentials=true", "--cluster-signing-cert-file="+pki("ca.crt"),
			"--cluster-signing-key-file="+pki("ca.key"), "--service-cluster-ip-range="+s.ServiceCIDR,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false",
			// The client budget of each built-in controller equals Keelson's default (the chart's kubeAPI), so
			// the benchmarks compare controllers rather than rate limits; kube-controller-manager's own default
			// (20/30) would cap the apps/v1 DaemonSet controller at about 20 pod creations per second.
			"--kube-api-qps=50", "--kube-api-burst=100",
			// kwok renews each simulated node's lease every 10 s (a quarter of its 40 s); at 10,000 nodes on two
			// cores its renewals fall behind the default 50 s, and a node taken for unreachable has its pods
			// marked not ready, which stalls a benchmark trial for reasons that are not the controller's.
			"--node-monitor-grace-period="+nodeMonitorGracePeriod.String())},
		"kube-scheduler": {Name: "kube-scheduler", Path: l.Bin("kube-scheduler"), Args: append(kc("scheduler"),
			"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false")},
		"kubelet": {Name: "kubelet", Path: l.Bin("kubelet"), Args: []string{"--config=" + l.EtcFile(kubeletConfig),
			"--kubeconfig=" + pki("kubelet.kubeconfig"), "--node-ip=" + s.HostIP, "--hostname-override=" + s.NodeName,
			"--root-dir=" + l.KubeletRoot(), "--cert-dir=" + filepath.Join(l.KubeletRoot(), "pki"), "--v=1"}},
		"kube-proxy": {Name: "kube-proxy", Path: l.Bin("kube-proxy"), Args: []string{"--config=" + l.EtcFile(kubeProxyConfig),
			"--hostname-override=" + s.NodeName}},
		// kwok manages only the simulated nodes (by annotation): the real node stays the kubelet's.
		"kwok": {Name: "kwok", Path: l.KwokBinary, Args: []string{"--kubeconfig=" + pki("kwok.kubeconfig"),
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + fakeNodeAnnotation + "=fake",
			"--cidr=" + s.FakePodCIDR, "--node-ip=" + s.HostIP, "--node-lease-duration-seconds=" + strconv.Itoa(kwokLeaseSeconds),
			"--server-address=127.0.0.1:10247", "--v=WARN", "--config=" + l.EtcFile(kwokConfig), "--config=" + l.KwokStages,
			"--config=" + l.EtcFile(kwokStages)}},
	}
}

// fingerprintFile records the configuration the running cluster was started with.
func (c *Cluster) fingerprintFile() string { return filepath.Join(c.L.PIDsDir(), "fingerprint") }

// fingerprint digests everything that shapes the running cluster: every process's binary (path, size, time) and
// flags, and every config file. A cluster started with another fingerprint is restarted by Up.
func (c *Cluster) fingerprint() (string, error) {
	h := sha256.New()
	procs := c.procs()
	for _, n := range procOrder {
		p := procs[n]
		_, _ = fmt.Fprintf(h, "%s %s %q\n", n, p.Path, p.Args)
		if info, err := os.Stat(p.Path); err == nil {
			_, _ = fmt.Fprintf(h, "%d %d\n", info.Size(), info.ModTime().UnixNano())
		}
	}
	files, err := Render(c.S, c.L)
	if err != nil {
		return "", err
	}
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		_, _ = fmt.Fprintf(h, "%s\n%s\n", n, files[n])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Running says whether every process runs.
func (c *Cluster) allRunning() bool {
	for _, n := range procOrder {
		if _, ok := c.L.Running(n); !ok {
			return false
		}
	}
	return true
}

// anyLeftovers says whether an earlier run left anything behind: PID files, state, the bridge or our mounts.
func (c *Cluster) anyLeftovers() bool {
	for _, d := range c.L.StateDirs() {
		if fileExists(d) {
			return true
		}
	}
	if _, err := net.InterfaceByName(c.S.Bridge); err == nil {
		return true
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	return len(OurMounts(string(mounts), []string{c.L.Dir})) > 0 || len(ourCgroups()) > 0
}

// client returns a cluster-admin client.
func (c *Cluster) client() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.L.PKIDir(), "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	return kubernetes.NewForConfig(cfg)
}

// healthy says whether the apiserver answers /readyz.
func healthy(ctx context.Context, cs *kubernetes.Clientset) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// restartable are the processes Restart may restart: the control plane's store and front, whose restarts the
// controllers must ride out. The others are the node's, or are restarted by make cluster-up.
var restartable = map[string]bool{"etcd": true, "kube-apiserver": true}

// Restart stops one control-plane process (SIGTERM, then SIGKILL after 10 s), keeps it down for down, starts it
// again with the very command line it ran with (read from /proc before the stop, so no flag can differ from what
// `up` gave it), appending to its log, and waits until the apiserver answers /readyz. It returns the time from the
// stop until then.
func (c *Cluster) Restart(ctx context.Context, name string, down time.Duration) (time.Duration, error) {
	if !restartable[name] {
		return 0, fmt.Errorf("--process: %q is not one of etcd, kube-apiserver", name)
	}
	p, err := c.L.RunningProc(name)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := c.L.Stop(name, 10*time.Second); err != nil {
		return 0, fmt.Errorf("stopping %s: %w", name, err)
	}
	t := time.NewTimer(down)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-t.C:
	}
	// Started even when ctx ended meanwhile: a restart never leaves the cluster without its process.
	if err := c.L.start(p, os.O_APPEND); err != nil {
		return 0, fmt.Errorf("starting %s: %w", name, err)
	}
	cs, err := c.client()
	if err != nil {
		return 0, err
	}
	if err := c.waitFor(ctx, "the apiserver", 2*time.Minute, func() (bool, error) { return healthy(ctx, cs), nil }); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Up brings the cluster up, or checks that it is up: it is idempotent. It first removes whatever an earlier run
// that was killed without teardown left behind.
func (c *Cluster) Up(ctx context.Context, fakeNodes int) error {
	t0 := time.Now()
	if err := Preflight(c.Logf); err != nil {
		return err
	}
	if err := c.checkBinaries(); err != nil {
		return err
	}
	fingerprint, err := c.fingerprint()
	if err != nil {
		return err
	}
	if c.allRunning() {
		if old, _ := os.ReadFile(c.fingerprintFile()); string(old) != fingerprint {
			c.Logf("the cluster's configuration changed (flags, config files or binaries): restarting it")
		} else if cs, err := c.client(); err == nil && healthy(ctx, cs) {
			c.Logf("already up")
			return c.finish(ctx, cs, fakeNodes, t0)
		}
	}
	if c.anyLeftovers() {
		c.Logf("removing what an earlier run left behind")
		if err := c.Down(ctx); err != nil {
			return fmt.Errorf("cleaning up an earlier run: %w", err)
		}
	}
	if err := c.prepare(); err != nil {
		return err
	}
	if err := os.WriteFile(c.fingerprintFile(), []byte(fingerprint), 0o644); err != nil {
		return err
	}
	if err := c.startContainerd(ctx); err != nil {
		return err
	}
	// Images import while the control plane starts.
	var imports sync.WaitGroup
	var importErr error
	imports.Add(1)
	go func() { defer imports.Done(); importErr = c.importImages(ctx) }()
	for _, n := range []string{"etcd", "kube-apiserver"} {
		if err := c.L.Start(c.procs()[n]); err != nil {
			return err
		}
	}
	cs, err := c.client()
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, "kube-apiserver", 90*time.Second, func() (bool, error) { return healthy(ctx, cs), nil }); err != nil {
		return err
	}
	c.Logf("apiserver ready after %.1fs", time.Since(t0).Seconds())
	for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if err := c.L.Start(c.procs()[n]); err != nil {
			return err
		}
	}
	imports.Wait()
	if importErr != nil {
		return importErr
	}
	if err := c.startNode(ctx, cs); err != nil {
		return err
	}
	return c.finish(ctx, cs, fakeNodes, t0)
}

// checkBinaries checks that the pinned binaries the cluster runs are installed.
func (c *Cluster) checkBinaries() error {
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if !fileExists(c.L.Bin(b)) {
			return fmt.Errorf("%s is missing: run tools/install.sh kube (make cluster-up does)", c.L.Bin(b))
		}
	}
	for _, f := range []string{c.L.KwokBinary, c.L.KwokStages} {
		if !fileExists(f) {
			return fmt.Errorf("%s is missing: run tools/install.sh kwok (make cluster-up does)", f)
		}
	}
	return nil
}

// startContainerd starts containerd and waits until its socket answers.
func (c *Cluster) startContainerd(ctx context.Context) error {
	if err := c.L.Start(c.procs()["containerd"]); err != nil {
		return err
	}
	return c.waitFor(ctx, "containerd", 30*time.Second, func() (bool, error) {
		conn, err := net.Dial("unix", c.L.Socket())
		if err == nil {
			_ = conn.Close()
		}
		return err == nil, nil
	})
}

// startNode starts the kubelet and kube-proxy, waits until the node is Ready and the default ServiceAccount exists,
// and applies CoreDNS, waiting until it is available.
func (c *Cluster) startNode(ctx context.Context, cs kubernetes.Interface) error {
	for _, n := range []string{"kubelet", "kube-proxy"} {
		if err := c.L.Start(c.procs()[n]); err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, "node "+c.S.NodeName+" Ready", 90*time.Second, func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, c.S.NodeName, metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the default ServiceAccount", 60*time.Second, func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, c.L.Bin("kubectl"), "--kubeconfig", c.L.Kubeconfig(), "apply", "--server-side",
		"--force-conflicts", "--field-manager=keelson-cluster", "-f", c.L.EtcFile(coreDNSManifest)).CombinedOutput(); err != nil {
		return fmt.Errorf("applying CoreDNS: %w\n%s", err, out)
	}
	return c.waitFor(ctx, "CoreDNS available", 90*time.Second, func() (bool, error) {
		d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		return err == nil && deploymentAvailable(d), nil
	})
}

// finish makes the simulated nodes and reports.
func (c *Cluster) finish(ctx context.Context, cs *kubernetes.Clientset, fakeNodes int, t0 time.Time) error {
	if fakeNodes >= 0 {
		if err := c.ResizePool(ctx, cs, fakeNodes); err != nil {
			return err
		}
	}
	c.Logf("cluster up after %.1fs: export KUBECONFIG=%s", time.Since(t0).Seconds(), c.L.Kubeconfig())
	return nil
}

// prepare writes the PKI (when missing or made for another host), the config files and the directories.
func (c *Cluster) prepare() error {
	if !PKICurrent(c.L.PKIDir(), c.S) {
		c.Logf("writing a new PKI for %s (%s)", c.S.NodeName, c.S.HostIP)
		if err := WritePKI(c.L.PKIDir(), c.S); err != nil {
			return fmt.Errorf("PKI: %w", err)
		}
	}
	admin, err := os.ReadFile(filepath.Join(c.L.PKIDir(), "admin.kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.L.Kubeconfig(), admin, 0o600); err != nil {
		return err
	}
	files, err := Render(c.S, c.L)
	if err != nil {
		return err
	}
	for name, b := range files {
		path := c.L.EtcFile(name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	for _, d := range []string{c.L.EtcdData(), c.L.ContainerdRoot(), c.L.ContainerdState(), c.L.KubeletRoot(), c.L.CNIData(),
		c.L.PodLogs(), c.L.PIDsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return os.Chmod(c.L.EtcdData(), 0o700) // etcd refuses a data directory others can read
}

// importImages loads every OCI archive in the images directory into the node's containerd.
func (c *Cluster) importImages(ctx context.Context) error {
	archives, _ := filepath.Glob(filepath.Join(c.L.ImagesDir, "*.tar"))
	return ImportImages(ctx, c.L.Socket(), archives)
}

// ImportImages loads OCI archives into the containerd at socket, in its Kubernetes namespace, in parallel.
func ImportImages(ctx context.Context, socket string, archives []string) error {
	errs := make([]error, len(archives))
	var wg sync.WaitGroup
	for i, a := range archives {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.CommandContext(ctx, "ctr", "-a", socket, "-n", "k8s.io", "images", "import", a).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("importing %s: %w\n%s", a, err, out)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitFor polls cond every 200ms until it holds, failing with what it waited for and where to look.
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	if err := wait.Poll(ctx, 200*time.Millisecond, timeout, cond); err != nil {
		return fmt.Errorf("waiting for %s: %w (logs: %s)", what, err, c.L.LogsDir())
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	return d.Spec.Replicas != nil && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas &&
		d.Status.UpdatedReplicas == *d.Spec.Replicas
}

// Down stops every process and removes every trace of the cluster from the host: containers, mounts, network
// namespaces, the bridge, iptables chains, cgroups and state. It works on a cluster that was killed half-way too,
// and on a host where nothing runs. The PKI, configs and logs stay under the cluster's directory.
func (c *Cluster) Down(_ context.Context) error {
	var errs []error
	// The kubelet first: it would restart the containers we are about to kill.
	stop := func(n string) {
		if err := c.L.Stop(n, 10*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", n, err))
		}
	}
	stop("kubelet")
	// Containers: kill what runs in the kubelet's cgroups, then the shims of our containerd.
	roots := ourCgroups()
	for range 3 {
		if killCgroupProcs(roots) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond) // let the kernel deliver the SIGKILLs before counting again
	}
	for i := len(procOrder) - 1; i >= 0; i-- {
		if procOrder[i] != "kubelet" {
			stop(procOrder[i])
		}
	}
	for _, pid := range ShimPIDs(cmdlines(), c.L.Socket()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Mounts: container root filesystems, shm, volumes, network namespaces. Lazy, since a dying process may still
	// hold one for a moment.
	if b, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, m := range OurMounts(string(b), []string{c.L.Dir}) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
			}
			if strings.Contains(m, "/netns/cni-") {
				_ = os.Remove(m)
			}
		}
	}
	if _, err := net.InterfaceByName(c.S.Bridge); err == nil {
		if out, err := exec.Command("ip", "link", "del", c.S.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %w: %s", c.S.Bridge, err, out))
		}
	}
	errs = append(errs, cleanIptables()...)
	errs = append(errs, removeCgroups(roots)...)
	if results, _ := filepath.Glob("/var/lib/cni/results/keelson-*"); len(results) > 0 {
		for _, r := range results {
			_ = os.Remove(r)
		}
	}
	for _, d := range c.L.StateDirs() {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Status reports each process and the nodes, and fails unless the cluster is fully up.
func (c *Cluster) Status(ctx context.Context, printf func(string, ...any)) error {
	down := 0
	for _, n := range procOrder {
		if pid, ok := c.L.Running(n); ok {
			printf("%-24s running (pid %d)\n", n, pid)
		} else {
			printf("%-24s stopped\n", n)
			down++
		}
	}
	cs, err := c.client()
	if err != nil || !healthy(ctx, cs) {
		printf("%-24s not answering\n", "apiserver")
		return fmt.Errorf("the cluster is not up (make cluster-up)")
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	real, fake, fakeReady := 0, 0, 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Annotations[fakeNodeAnnotation] == "fake" {
			fake++
			if nodeReady(n) {
				fakeReady++
			}
		} else if nodeReady(n) {
			real++
		}
	}
	printf("%-24s %s\n", "apiserver", c.S.APIServer())
	printf("%-24s %d real Ready, %d/%d simulated Ready\n", "nodes", real, fakeReady, fake)
	printf("%-24s export KUBECONFIG=%s\n", "kubeconfig", c.L.Kubeconfig())
	if down > 0 || real == 0 {
		return fmt.Errorf("the cluster is degraded: %d processes stopped, %d real nodes Ready", down, real)
	}
	return nil
}

// ResizePool makes the pool hold exactly want simulated nodes. When it deleted many (kwokForgetsAfter), it restarts
// kwok with fresh leases (restartKwok). kwok failed, without end, every lease renewal of a node made again under a
// deleted one's name (a UID precondition naming the deleted lease), and the retries crowded out the live nodes'
// renewals: shrinking the pool from 10,000 nodes to 1000 and growing it to 5000 left 613 nodes NotReady and 91,000
// failed renewals in 30 minutes; a restart of kwok ended both.
func (c *Cluster) ResizePool(ctx context.Context, cs kubernetes.Interface, want int) error {
	removed, err := EnsureFakeNodes(ctx, cs, want, c.Logf)
	if err != nil || len(removed) < kwokForgetsAfter {
		return err
	}
	return c.restartKwok(ctx, cs, removed)
}

// kwokForgetsAfter is how many deleted nodes call for a restart of kwok. The reliability suite's soak deletes up to
// 20 nodes a minute and makes them again, for 30 minutes, and no lease renewal ever failed; a shrink by thousands
// left hundreds of nodes NotReady. Below this, kwok keeps running, as it always did.
const kwokForgetsAfter = 100

// restartKwok stops kwok, deletes the leases of the nodes removed and of every node it simulates, and starts it
// again, exactly as it ran. With their leases gone the new kwok makes fresh ones at once: a lease still held by the
// old kwok it would take over only once expired (kwokLeaseSeconds), leaving every simulated node unrenewed for most
// of a minute. It returns once every simulated node's lease has been renewed since the start.
func (c *Cluster) restartKwok(ctx context.Context, cs kubernetes.Interface, removed []string) error {
	p, err := c.L.RunningProc("kwok")
	if err != nil {
		return err
	}
	simulated, err := kwokNodes(ctx, cs)
	if err != nil {
		return err
	}
	if err := c.L.Stop("kwok", 10*time.Second); err != nil {
		return fmt.Errorf("stopping kwok: %w", err)
	}
	start := time.Now()
	deleteErr := deleteNodeLeases(ctx, cs, append(removed, simulated...))
	// Started even when the deletions failed: a restart never leaves the cluster without its process.
	if err := c.L.start(p, os.O_APPEND); err != nil {
		return fmt.Errorf("starting kwok: %w", err)
	}
	if deleteErr != nil {
		return deleteErr
	}
	// Once a second: a list of 10,000 leases is a few megabytes.
	if err := wait.Poll(ctx, time.Second, 3*time.Minute, func() (bool, error) {
		return leasesRenewedSince(ctx, cs, simulated, start)
	}); err != nil {
		return fmt.Errorf("waiting for kwok to renew every simulated node's lease: %w (logs: %s)", err, c.L.LogsDir())
	}
	c.Logf("kwok restarted with fresh leases (%d nodes deleted, %d simulated) in %.1fs", len(removed), len(simulated),
		time.Since(start).Seconds())
	return nil
}
