//go:build integration

package testenv_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// A start that fails once the control plane runs (here: a webhook configuration the apiserver refuses) stops it:
// no kube-apiserver or etcd of this process is left running, each holding hundreds of MB, after its tests end.
func TestAFailedStartLeavesNoProcess(t *testing.T) {
	before := children(t)
	_, err := testenv.Start(testenv.Options{WebhookManifests: []string{"internal/testenv/testdata/invalid-webhook.yaml"}})
	if err == nil {
		t.Fatal("a start with a webhook configuration the apiserver refuses succeeded: the test proves nothing")
	}
	for c := range children(t) {
		if !before[c] {
			t.Errorf("a failed start left %s running", c)
		}
	}
}

// children are this process's running children that run kube-apiserver or etcd, as "pid command".
func children(t *testing.T) map[string]bool {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	out := map[string]bool{}
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat)[i+1:])
		if len(fields) < 2 || fields[1] != me || fields[0] == "Z" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		name := filepath.Base(strings.SplitN(string(cmd), "\x00", 2)[0])
		if name == "kube-apiserver" || name == "etcd" {
			out[filepath.Base(d)+" "+name] = true
		}
	}
	return out
}
