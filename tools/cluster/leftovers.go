package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Leftovers lists every trace of the cluster on the host: processes running its binaries or its files, mounts
// under its directory, CNI network namespaces, the bridge, iptables chains and cgroups. Empty after a good Down.
func (c *Cluster) Leftovers() []string {
	var out []string
	ours := map[string]bool{c.L.KwokBinary: true}
	for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"} {
		ours[c.L.Bin(n)] = true
	}
	for pid, cl := range cmdlines() {
		if pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || processState(string(stat)) == "Z" {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		exe = strings.TrimSuffix(exe, " (deleted)")
		if ours[exe] || strings.Contains(cl, c.L.Dir+string(filepath.Separator)) {
			out = append(out, fmt.Sprintf("process %d: %s", pid, strings.ReplaceAll(strings.TrimRight(cl, "\x00"), "\x00", " ")))
		}
	}
	if b, err := os.ReadFile("/proc/mounts"); err == nil {
		for _, m := range OurMounts(string(b), []string{c.L.Dir}) {
			out = append(out, "mount "+m)
		}
	}
	if _, err := net.InterfaceByName(c.S.Bridge); err == nil {
		out = append(out, "bridge "+c.S.Bridge)
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			rules, err := exec.Command(bin, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			_, chains := IptablesCleanup(string(rules))
			for _, ch := range chains {
				out = append(out, fmt.Sprintf("%s chain %s/%s", bin, table, ch))
			}
		}
	}
	for _, cg := range ourCgroups() {
		out = append(out, "cgroup "+cg)
	}
	for _, d := range c.L.StateDirs() {
		if fileExists(d) {
			out = append(out, "state "+d)
		}
	}
	return out
}
