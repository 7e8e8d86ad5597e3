//go:build integration

// Package tools_test tests the scripts in tools/ that the Makefile relies on.
package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a throw-away git repository holding a copy of verify-generated.sh and one committed file.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile("verify-generated.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools", "verify-generated.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "generated.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func verify(t *testing.T, dir, command string) (string, bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "tools", "verify-generated.sh"), "sh", "-c", command)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func TestVerifyGeneratedPassesWhenNothingChanges(t *testing.T) {
	dir := gitRepo(t)
	// A dirty tree is fine as long as the command itself changes nothing.
	if err := os.WriteFile(filepath.Join(dir, "work-in-progress.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := verify(t, dir, "true"); !ok {
		t.Fatalf("a no-op command was reported as drift:\n%s", out)
	}
}

func TestVerifyGeneratedFailsOnDrift(t *testing.T) {
	for name, command := range map[string]string{
		"a tracked file is rewritten": "echo '// regenerated' >> generated.go",
		"a new file is generated":     "echo 'package x' > zz_generated.go",
	} {
		t.Run(name, func(t *testing.T) {
			dir := gitRepo(t)
			out, ok := verify(t, dir, command)
			if ok || !strings.Contains(out, "changed the tree") {
				t.Fatalf("drift was not reported (ok=%v):\n%s", ok, out)
			}
		})
	}
}
