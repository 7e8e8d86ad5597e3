package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Only etcd and the apiserver are restarted, and only when they run: a restart never starts a second copy or
// touches the node's processes.
func TestRestartRefusesOtherProcessesAndStoppedOnes(t *testing.T) {
	c := testCluster(t)
	for name, want := range map[string]string{
		"kubelet":        "is not one of etcd, kube-apiserver",
		"":               "is not one of etcd, kube-apiserver",
		"etcd":           "is not running",
		"kube-apiserver": "is not running",
	} {
		_, err := c.Restart(context.Background(), name, 0)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Restart(%q) = %v, want an error saying %q", name, err, want)
		}
	}
}

// A running process is read back as it runs: its recorded binary and its arguments, ready to start again.
func TestRunningProcReadsTheCommandLine(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.PIDsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.pidFile("etcd"), fmt.Appendf(nil, "%d %s\n", os.Getpid(), self), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := l.RunningProc("etcd")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "etcd" || p.Path != self || !slices.Equal(p.Args, os.Args[1:]) {
		t.Fatalf("RunningProc = %+v, want %s with %v", p, self, os.Args[1:])
	}
}
