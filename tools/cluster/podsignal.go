package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// podSignals are the signals signal-pod sends, by the name it takes.
var podSignals = map[string]syscall.Signal{"KILL": syscall.SIGKILL, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
	"TERM": syscall.SIGTERM}

// SignalPod sends sig to every process of the containers of the pod with that UID on the real node, found through
// the kubelet's cgroups (cgroupfs driver: kubepods/[qos/]pod<uid>/<container>), never by matching process names: a
// fault the reliability suite injects hits that pod and nothing else. The sandbox's pause process is spared, so a
// SIGKILL is a container crash (the kubelet restarts the container in the same pod), not a lost sandbox. It returns
// the PIDs signalled; none is an error.
func SignalPod(cgroupRoots []string, uid, sig string) ([]int, error) {
	s, ok := podSignals[sig]
	if !ok {
		return nil, fmt.Errorf("unknown signal %q: want KILL, STOP, CONT or TERM", sig)
	}
	pids := podPIDs(cgroupRoots, uid, func(pid int) string {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		return strings.TrimSpace(string(b))
	})
	if len(pids) == 0 {
		return nil, fmt.Errorf("no container process of pod %s on this node", uid)
	}
	var sent []int
	for _, pid := range pids {
		if err := syscall.Kill(pid, s); err == nil {
			sent = append(sent, pid)
		}
	}
	if len(sent) == 0 {
		return nil, fmt.Errorf("signalling pod %s: every process was gone", uid)
	}
	return sent, nil
}

// podPIDs lists, once each and sorted, the PIDs in the cgroup.procs files under the pod's cgroup directories (under
// every hierarchy in roots), leaving out the sandbox's pause process (comm names a PID's command).
func podPIDs(roots []string, uid string, comm func(int) string) []int {
	seen := map[int]bool{}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" || !underPod(path, uid) {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 && comm(pid) != "pause" {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// underPod reports whether a cgroup file lies under the pod's directory, pod<uid> as the cgroupfs driver (the local
// cluster's) names it.
func underPod(path, uid string) bool {
	for _, dir := range strings.Split(filepath.Dir(path), string(filepath.Separator)) {
		if dir == "pod"+uid {
			return true
		}
	}
	return false
}
