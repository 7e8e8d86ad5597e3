package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPort(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", "8080"},
		{nil, "9000", "9000"},
		{[]string{"--model=x", "--listenPort=9080"}, "9000", "9080"},
		{[]string{"--port=7000"}, "", "7000"},
		{[]string{"--listenPort="}, "", "8080"},
	} {
		if got := port(tc.args, env(tc.env)); got != tc.want {
			t.Errorf("port(%v, PORT=%q) = %s, want %s", tc.args, tc.env, got, tc.want)
		}
	}
}

func TestCatFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cmdline")
	if err := os.WriteFile(p, []byte("/tini\x00--\x00/daemonset-controller\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := catFile(p); err != nil || got != "/tini -- /daemonset-controller" {
		t.Fatalf("catFile = %q, %v", got, err)
	}
}
