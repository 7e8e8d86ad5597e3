package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOurMounts(t *testing.T) {
	mounts := strings.Join([]string{
		"/dev/vda / ext4 rw 0 0",
		"overlay /w/.cluster/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs overlay rw 0 0",
		"shm /w/.cluster/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm tmpfs rw 0 0",
		"tmpfs /w/.cluster/data/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access tmpfs rw 0 0",
		"nsfs /run/netns/cni-1234 nsfs rw 0 0",
		"tmpfs /w/.clusterish/x tmpfs rw 0 0",
		"tmpfs /w/.cluster/data/with\\040space tmpfs rw 0 0",
		"nsfs /run/netns/other nsfs rw 0 0",
	}, "\n")
	got := OurMounts(mounts, []string{"/w/.cluster"})
	want := []string{
		"/w/.cluster/data/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access",
		"/w/.cluster/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
		"/w/.cluster/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm",
		"/w/.cluster/data/with space",
		"/run/netns/cni-1234",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("mounts, deepest first (-want +got):\n%s", diff)
	}
}

func TestIptablesCleanup(t *testing.T) {
	rules := `-P INPUT ACCEPT
-P FORWARD DROP
-N DOCKER
-N KUBE-FORWARD
-N KUBE-SERVICES
-N CNI-FORWARD
-N CNI-ADMIN
-A INPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
-A FORWARD -j DOCKER
-A KUBE-FORWARD -j ACCEPT
-A CNI-FORWARD -j CNI-ADMIN`
	deletes, chains := IptablesCleanup(rules)
	wantDeletes := [][]string{
		{"-D", "INPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"},
		{"-D", "FORWARD", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"},
	}
	if diff := cmp.Diff(wantDeletes, deletes); diff != "" {
		t.Errorf("jumps into our chains to delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"KUBE-FORWARD", "KUBE-SERVICES", "CNI-FORWARD", "CNI-ADMIN"}, chains); diff != "" {
		t.Errorf("chains to remove; DOCKER is not ours (-want +got):\n%s", diff)
	}
}

func TestShimPIDs(t *testing.T) {
	sock := "/w/.cluster/run/containerd/containerd.sock"
	got := ShimPIDs(map[int]string{
		10: "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00k8s.io\x00-id\x00abc\x00-address\x00" + sock + "\x00",
		11: "/usr/bin/containerd-shim-runc-v2\x00-namespace\x00moby\x00-address\x00/run/containerd/containerd.sock\x00",
		12: "/bin/sleep\x00-address\x00" + sock + "\x00",
		13: "containerd-shim-runc-v2\x00-address\x00" + sock,
	}, sock)
	if diff := cmp.Diff([]int{10, 13}, got); diff != "" {
		t.Fatalf("our shims only (-want +got):\n%s", diff)
	}
}

func TestMissingPackages(t *testing.T) {
	present := map[string]bool{"/usr/bin/containerd": true, "/usr/sbin/runc": true, "/usr/sbin/ip": true, "/usr/sbin/iptables": true}
	got := MissingPackages(func(f string) bool { return present[f] })
	// ctr is missing too, but it comes with containerd, which is installed: apt is asked for each package once.
	if diff := cmp.Diff([]string{"conntrack", "containerd", "containernetworking-plugins"}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
