package tools_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// absenceByError matches the ways a script can take a failed kubectl call for "nothing there": a negated get, an
// empty command substitution, or a get whose errors are thrown away. e2e/lib.sh's absent and none ask for a
// NotFound answer or a listing that succeeded instead.
var absenceByError = []*regexp.Regexp{
	regexp.MustCompile(`!\s*kubectl\b[^|;&]*\bget\b`),
	regexp.MustCompile(`-z\s*\\?"\\?\$\(\s*kubectl\b`),
	regexp.MustCompile(`kubectl\b[^|;&]*\bget\b[^|;&]*2>\s*/dev/null`),
}

// scriptProblems says what is wrong with one script step's content: it must start with `set -eu` (chainsaw runs
// it with `sh -c`, so without -e only the last command decides the step), and it must not assert absence from a
// failed kubectl call.
func scriptProblems(content string) []string {
	var problems []string
	first := ""
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			first = line
			break
		}
	}
	if first != "set -eu" {
		problems = append(problems, "does not start with `set -eu` (starts with "+strings.TrimSpace(first)+")")
	}
	problems = append(problems, absenceProblems(content)...)
	return problems
}

// absenceProblems lists the lines of a script that take a kubectl error for absence.
func absenceProblems(content string) []string {
	var problems []string
	for _, line := range strings.Split(content, "\n") {
		for _, re := range absenceByError {
			if re.MatchString(line) {
				problems = append(problems, "takes a kubectl error for absence (use absent or none from e2e/lib.sh): "+strings.TrimSpace(line))
				break
			}
		}
	}
	return problems
}

// scripts collects the content of every script step anywhere in a decoded chainsaw test (try, catch, finally,
// cleanup alike).
func scripts(node any) []string {
	var out []string
	switch n := node.(type) {
	case map[string]any:
		if s, ok := n["script"].(map[string]any); ok {
			if c, ok := s["content"].(string); ok {
				out = append(out, c)
			}
		}
		for _, v := range n {
			out = append(out, scripts(v)...)
		}
	case []any:
		for _, v := range n {
			out = append(out, scripts(v)...)
		}
	}
	return out
}

// Every chainsaw script starts with `set -eu` and asserts absence by a NotFound answer, never by a failed or empty
// kubectl call; e2e/lib.sh follows the same rule.
func TestE2EScriptsFailOnTheFirstFailedCheck(t *testing.T) {
	files, err := filepath.Glob("../e2e/*/chainsaw-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nested, err := filepath.Glob("../e2e/*/*/chainsaw-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, nested...)
	if len(files) < 5 {
		t.Fatalf("found only %d chainsaw tests under e2e/: %v", len(files), files)
	}
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, c := range scripts(doc) {
			total++
			for _, p := range scriptProblems(c) {
				t.Errorf("%s: script %d %s", f, i+1, p)
			}
		}
	}
	if total < 20 {
		t.Errorf("found only %d scripts: the walk over the chainsaw tests is broken", total)
	}
	lib, err := os.ReadFile("../e2e/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range absenceProblems(string(lib)) {
		t.Errorf("e2e/lib.sh %s", p)
	}
}

// The checker itself refuses each way a script can pass whatever happens, and accepts the ways that cannot.
func TestScriptProblemsCatchesChecksThatCannotFail(t *testing.T) {
	bad := map[string]string{
		"no set -e":          "kubectl get pods\n",
		"set -e without -u":  "set -e\nkubectl get pods\n",
		"set -eu not first":  "kubectl get pods\nset -eu\n",
		"negated get":        "set -eu\neventually x 60 sh -c \"! kubectl -n ns get service web\"\n",
		"empty substitution": "set -eu\neventually x 60 sh -c \"[ -z \\\"\\$(kubectl get pods -o name)\\\" ]\"\n",
		"errors discarded":   "set -eu\nkubectl get pv x 2>/dev/null || echo gone\n",
	}
	for name, content := range bad {
		if len(scriptProblems(content)) == 0 {
			t.Errorf("%s: accepted %q", name, content)
		}
	}
	good := []string{
		"set -eu\nkubectl get pods\n",
		"# a comment first\n\nset -eu\n. ../lib.sh\neventually x 60 absent -n ns service web\n",
		"set -eu\nhelm_release >/dev/null\n",
	}
	for _, content := range good {
		if p := scriptProblems(content); len(p) != 0 {
			t.Errorf("refused %q: %v", content, p)
		}
	}
}
