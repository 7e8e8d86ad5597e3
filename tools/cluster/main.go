// Command cluster runs Keelson's local Kubernetes cluster: one real node on this host (etcd, the control plane,
// containerd, a kubelet and kube-proxy as host processes, CoreDNS as a pod) plus, on request, simulated nodes
// managed by kwok. Every binary is pinned (tools/install.sh kube, kwok); every file it writes lives under --dir.
//
//	cluster up [--fake-nodes N]   start (or check) the cluster; clean up a killed earlier run first
//	cluster down                   stop everything and leave the host clean
//	cluster status                 show the processes and nodes; fails unless the cluster is up
//	cluster nodes --fake-nodes N   resize the pool of simulated nodes
//	cluster load ARCHIVE...        import OCI image archives into the node's containerd
//	cluster check-clean            fail if anything of the cluster is left on the host (after down)
//	cluster kill                   SIGKILL every process of the cluster, as a crash would (to test recovery)
//	cluster signal-pod --pod-uid UID --signal KILL|STOP|CONT|TERM
//	                               signal the container processes of one pod on the real node (fault injection)
//	cluster restart --process etcd|kube-apiserver [--down D]
//	                               stop one control-plane process, keep it down for D, start it again and wait
//	                               until the apiserver is ready (fault injection)
//
// The Makefile drives it: make cluster-up, cluster-down, cluster-status, images-local, dev.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: cluster up|down|status|nodes|load|check-clean|kill|signal-pod|restart [flags]")
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	dir := fs.String("dir", ".cluster", "the cluster's directory: PKI, configs, data, logs, PIDs, kubeconfig")
	binDir := fs.String("bin-dir", "", "directory of the pinned Kubernetes binaries and etcd (tools/install.sh kube)")
	kwok := fs.String("kwok", "bin/kwok", "the pinned kwok binary (tools/install.sh kwok)")
	kwokStages := fs.String("kwok-stages", "bin/kwok-stages.yaml", "the pinned kwok release's stages (tools/install.sh kwok)")
	images := fs.String("images-dir", "bin/images", "OCI archives imported into the node on every start")
	fakeNodes := fs.Int("fake-nodes", envInt("FAKE_NODES", -1), "simulated nodes to keep (FAKE_NODES; -1 leaves the pool as it is)")
	hostIP := fs.String("host-ip", "", "the host address the cluster uses (default: the source address of the default route)")
	podUID := fs.String("pod-uid", "", "signal-pod: the UID of the pod whose container processes to signal")
	sig := fs.String("signal", "KILL", "signal-pod: KILL, STOP, CONT or TERM")
	process := fs.String("process", "", "restart: the control-plane process to restart, etcd or kube-apiserver")
	down := fs.Duration("down", 0, "restart: how long the process stays stopped")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, _ := filepath.Abs(p)
		return a
	}
	if *hostIP == "" {
		ip, err := defaultHostIP()
		if err != nil {
			return err
		}
		*hostIP = ip
	}
	c := &Cluster{
		L:    Layout{Dir: abs(*dir), BinDir: abs(*binDir), KwokBinary: abs(*kwok), KwokStages: abs(*kwokStages), ImagesDir: abs(*images)},
		S:    DefaultSettings(*hostIP),
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "cluster: "+f+"\n", a...) },
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.command(ctx, cmd, commandFlags{binDir: *binDir, fakeNodes: *fakeNodes, podUID: *podUID, sig: *sig,
		process: *process, down: *down}, fs.Args())
}

// commandFlags are the flags a command reads beyond the cluster's layout.
type commandFlags struct {
	binDir, podUID, sig, process string
	fakeNodes                    int
	down                         time.Duration
}

// command runs one command of the cluster tool on c; args are what is left after the flags.
func (c *Cluster) command(ctx context.Context, cmd string, f commandFlags, args []string) error {
	switch cmd {
	case "up":
		if f.binDir == "" {
			return fmt.Errorf("--bin-dir is required")
		}
		return c.Up(ctx, f.fakeNodes)
	case "down":
		if err := c.Down(ctx); err != nil {
			return err
		}
		c.Logf("down: no process, mount, bridge, iptables chain or cgroup of the cluster is left")
		return nil
	case "status":
		return c.Status(ctx, func(f string, a ...any) { fmt.Printf(f, a...) })
	case "nodes":
		cs, err := c.client()
		if err != nil {
			return err
		}
		if f.fakeNodes < 0 {
			return fmt.Errorf("--fake-nodes (or FAKE_NODES) is required")
		}
		return c.ResizePool(ctx, cs, f.fakeNodes)
	case "load":
		if _, ok := c.L.Running("containerd"); !ok {
			return fmt.Errorf("the cluster is not up (make cluster-up)")
		}
		return ImportImages(ctx, c.L.Socket(), args)
	case "kill":
		for _, n := range procOrder {
			if pid, ok := c.L.Running(n); ok {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				c.Logf("killed %s (pid %d)", n, pid)
			}
		}
		return nil
	case "signal-pod":
		if f.podUID == "" {
			return fmt.Errorf("--pod-uid is required")
		}
		pids, err := SignalPod(ourCgroups(), f.podUID, f.sig)
		if err != nil {
			return err
		}
		c.Logf("sent SIG%s to pod %s: pids %v", f.sig, f.podUID, pids)
		return nil
	case "restart":
		took, err := c.Restart(ctx, f.process, f.down)
		if err != nil {
			return err
		}
		c.Logf("restarted %s: the apiserver was ready again %.1fs after the stop", f.process, took.Seconds())
		return nil
	case "check-clean":
		if left := c.Leftovers(); len(left) > 0 {
			return fmt.Errorf("the host still holds:\n  %s", strings.Join(left, "\n  "))
		}
		c.Logf("the host is clean")
		return nil
	default:
		return fmt.Errorf("unknown command %q: want up, down, status, nodes, load, check-clean, kill or signal-pod", cmd)
	}
}

// envInt reads an integer environment variable, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// defaultHostIP returns the source address of the default route (a UDP "dial" sends nothing), else the first
// non-loopback IPv4 address. The apiserver advertises it; a loopback address would not do (EndpointSlices refuse it).
func defaultHostIP() (string, error) {
	if conn, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		defer func() { _ = conn.Close() }()
		if a, ok := conn.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsLoopback() {
			return a.IP.String(), nil
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address on this host: pass --host-ip")
}
