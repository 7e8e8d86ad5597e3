package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// hostPackages are the Debian packages the real node needs, by the file that shows each is installed.
var hostPackages = []struct{ file, pkg string }{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{"/usr/bin/ctr", "containerd"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/sbin/iptables", "iptables"},
	{"/usr/sbin/conntrack", "conntrack"},
	{"/usr/sbin/ip", "iproute2"},
}

// MissingPackages returns the packages whose files are absent, each once, sorted.
func MissingPackages(exists func(string) bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range hostPackages {
		if !exists(p.file) && !seen[p.pkg] {
			seen[p.pkg] = true
			out = append(out, p.pkg)
		}
	}
	sort.Strings(out)
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Preflight checks what the host must offer and installs missing packages with apt. It fails with a message that
// says what is missing and why when it cannot help.
func Preflight(logf func(string, ...any)) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the local cluster runs a real kubelet and must run as root (it changes iptables, mounts and cgroups)")
	}
	if !fileExists("/sys/fs/cgroup/memory") && !fileExists("/sys/fs/cgroup/cgroup.controllers") {
		return fmt.Errorf("no cgroup filesystem at /sys/fs/cgroup: the kubelet cannot run containers here")
	}
	missing := MissingPackages(fileExists)
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing packages %v and no apt-get to install them: install them with the host's package manager", missing)
	}
	logf("installing %s with apt-get", strings.Join(missing, " "))
	install := func() error {
		cmd := exec.Command("apt-get", append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get install %v: %w\n%s", missing, err, out)
		}
		return nil
	}
	if install() == nil {
		return nil
	}
	if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, out)
	}
	return install()
}

// OurMounts returns the mount points in a /proc/mounts text that belong to the cluster — under one of prefixes,
// or a CNI network namespace — deepest first, so that nested mounts are unmounted before their parents.
func OurMounts(procMounts string, prefixes []string) []string {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(procMounts))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		mp := unescapeMount(fields[1])
		ours := strings.HasPrefix(mp, "/run/netns/cni-") || strings.HasPrefix(mp, "/var/run/netns/cni-")
		for _, p := range prefixes {
			if mp == p || strings.HasPrefix(mp, p+"/") {
				ours = true
			}
		}
		if ours && !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/"); di != dj {
			return di > dj
		}
		return out[i] > out[j]
	})
	return out
}

// unescapeMount decodes the octal escapes (\040 for a space) of /proc/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ourChainPrefixes are the iptables chains the kubelet, kube-proxy and the CNI plugins create.
var ourChainPrefixes = []string{"KUBE-", "CNI-"}

func ourChain(c string) bool {
	for _, p := range ourChainPrefixes {
		if strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// IptablesCleanup reads the output of `iptables -t <table> -S` and returns the commands that remove every chain of
// ours: first the rules in other chains that jump into ours (as -D arguments), then the chains to flush and delete.
func IptablesCleanup(rules string) (deletes [][]string, chains []string) {
	sc := bufio.NewScanner(strings.NewReader(rules))
	for sc.Scan() {
		args := splitRule(sc.Text())
		switch {
		case len(args) >= 2 && args[0] == "-N" && ourChain(args[1]):
			chains = append(chains, args[1])
		case len(args) >= 2 && args[0] == "-A" && !ourChain(args[1]):
			for i := 2; i+1 < len(args); i++ {
				if (args[i] == "-j" || args[i] == "-g") && ourChain(args[i+1]) {
					deletes = append(deletes, append([]string{"-D"}, args[1:]...))
					break
				}
			}
		}
	}
	return deletes, chains
}

// splitRule splits an iptables -S line into arguments, honouring double quotes (comments hold spaces).
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// cleanIptables removes our chains from every table of iptables and ip6tables.
func cleanIptables() []error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(bin, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue // the table does not exist here
			}
			deletes, chains := IptablesCleanup(string(out))
			for _, d := range deletes {
				if out, err := exec.Command(bin, append([]string{"-w", "-t", table}, d...)...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s: %w: %s", bin, table, strings.Join(d, " "), err, bytes.TrimSpace(out)))
				}
			}
			for _, c := range chains {
				_ = exec.Command(bin, "-w", "-t", table, "-F", c).Run()
			}
			for _, c := range chains {
				if out, err := exec.Command(bin, "-w", "-t", table, "-X", c).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s -X %s: %w: %s", bin, table, c, err, bytes.TrimSpace(out)))
				}
			}
		}
	}
	return errs
}

// ourCgroups are the cgroup directories the kubelet creates (cgroupfs driver): kubepods under every hierarchy.
func ourCgroups() []string {
	matches, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if fileExists("/sys/fs/cgroup/kubepods") {
		matches = append(matches, "/sys/fs/cgroup/kubepods")
	}
	return matches
}

// killCgroupProcs kills every process in the cgroup trees: the containers of a run that was never torn down.
func killCgroupProcs(roots []string) int {
	killed := 0
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
			return nil
		})
	}
	return killed
}

// removeCgroups removes the (now empty) cgroup trees, deepest first.
func removeCgroups(roots []string) []error {
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !os.IsNotExist(err) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errs
}

// ShimPIDs returns the containerd shims serving our containerd socket, from a map of PID to command line (NUL
// separated, as /proc/<pid>/cmdline holds it).
func ShimPIDs(cmdlines map[int]string, socket string) []int {
	var out []int
	for pid, cl := range cmdlines {
		args := strings.Split(strings.TrimRight(cl, "\x00"), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == socket {
				out = append(out, pid)
			}
		}
	}
	sort.Ints(out)
	return out
}

// cmdlines reads every process's command line.
func cmdlines() map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			out[pid] = string(b)
		}
	}
	return out
}
