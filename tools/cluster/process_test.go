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
