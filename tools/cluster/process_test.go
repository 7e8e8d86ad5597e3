//go:build integration

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestParsePIDFile(t *testing.T) {
	if pid, bin, err := ParsePIDFile([]byte("123 /usr/bin/containerd\n")); err != nil || pid != 123 || bin != "/usr/bin/containerd" {
		t.Fatalf("got %d %q %v", pid, bin, err)
	}
	for _, bad := range []string{"", "123", "abc /bin/x", "1 /sbin/init", "12 /a /b"} {
		if _, _, err := ParsePIDFile([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestProcessState(t *testing.T) {
	for stat, want := range map[string]string{
		"42 (sleep) S 1 42":           "S",
		"42 (a) b) (c) Z 1 42":        "Z",
		"42 (kube-apiserver) R 1 2 3": "R",
		"garbage":                     "",
	} {
		if got := processState(stat); got != want {
			t.Errorf("processState(%q) = %q, want %q", stat, got, want)
		}
	}
}

// A started process is found running by its PID file, is stopped by it, and a PID file naming another binary
// (a reused PID) is never signalled.
func TestStartRunningStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	l := Layout{Dir: t.TempDir()}
	if err := l.Start(Proc{Name: "sleeper", Path: sleep, Args: []string{"300"}}); err != nil {
		t.Fatal(err)
	}
	pid, ok := l.Running("sleeper")
	if !ok {
		t.Fatal("the started process is not running")
	}
	t.Cleanup(func() { _ = exec.Command("kill", "-9", itoa(pid)).Run() })

	// A PID file that names another binary for the same PID: not ours, left alone.
	if err := os.WriteFile(l.pidFile("impostor"), []byte(itoa(pid)+" /usr/bin/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Running("impostor"); ok {
		t.Fatal("a PID running another binary counts as ours")
	}
	if err := l.Stop("impostor", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Running("sleeper"); !ok {
		t.Fatal("stopping the impostor's PID file signalled the process")
	}

	if err := l.Stop("sleeper", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if processRuns(pid, resolve(t, sleep)) {
		t.Fatal("the process still runs after Stop")
	}
	if _, err := os.Stat(l.pidFile("sleeper")); !os.IsNotExist(err) {
		t.Fatalf("the PID file is still there: %v", err)
	}
	if err := l.Stop("never-started", time.Second); err != nil {
		t.Fatalf("stopping what never ran: %v", err)
	}
}

func resolve(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func itoa(i int) string { return strconv.Itoa(i) }
