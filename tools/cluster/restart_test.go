package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Only etcd and the apiserver are restarted, and only when they run: a restart never starts a second copy or
// touches the node's processes.
func TestRestartRefusesOtherProcessesAndStoppedOnes(t *testing.T) {
	c := &Cluster{L: Layout{Dir: t.TempDir()}, S: DefaultSettings("192.0.2.1"), Logf: t.Logf}
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

// A process whose binary is missing is not stopped: it could not be started again.
func TestRestartNeedsTheBinaryFirst(t *testing.T) {
	c := &Cluster{L: Layout{Dir: t.TempDir(), BinDir: t.TempDir()}, S: DefaultSettings("192.0.2.1"), Logf: t.Logf}
	// A running process recorded as etcd: this test's own, so Running says yes.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.L.PIDsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.L.pidFile("etcd"), fmt.Appendf(nil, "%d %s\n", os.Getpid(), self), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Restart(context.Background(), "etcd", 0)
	if err == nil || !strings.Contains(err.Error(), "cannot be started again") {
		t.Fatalf("Restart with no etcd binary = %v, want a refusal before the stop", err)
	}
	if _, ok := c.L.Running("etcd"); !ok {
		t.Fatal("the process was stopped although it could not be started again")
	}
}
