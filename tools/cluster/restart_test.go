package main

import (
	"context"
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
