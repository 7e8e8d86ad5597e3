package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Only the processes of the named pod's containers are found, each once across hierarchies, and never its pause
// process nor another pod's.
func TestPodPIDs(t *testing.T) {
	root := t.TempDir()
	write := func(path, procs string) {
		p := filepath.Join(root, path, "cgroup.procs")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(procs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const uid = "6f1e-42"
	write("pids/kubepods/besteffort/pod6f1e-42/sandbox", "100\n")
	write("pids/kubepods/besteffort/pod6f1e-42/controller", "200\n201\n")
	write("memory/kubepods/besteffort/pod6f1e-42/controller", "200\n201\n")
	write("pids/kubepods/besteffort/pod6f1e-43/controller", "300\n")
	write("pids/kubepods/burstable", "400\n")
	comm := func(pid int) string {
		if pid == 100 {
			return "pause"
		}
		return "keelson"
	}
	got := podPIDs([]string{filepath.Join(root, "pids"), filepath.Join(root, "memory")}, uid, comm)
	if want := []int{200, 201}; !reflect.DeepEqual(got, want) {
		t.Errorf("podPIDs = %v, want %v", got, want)
	}
	if got := podPIDs([]string{filepath.Join(root, "pids")}, "nope", comm); len(got) != 0 {
		t.Errorf("an unknown pod has no processes, got %v", got)
	}
	if _, err := SignalPod([]string{root}, uid, "HUP"); err == nil {
		t.Error("an unknown signal is refused")
	}
}
