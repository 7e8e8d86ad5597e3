package main

import (
	"testing"
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
