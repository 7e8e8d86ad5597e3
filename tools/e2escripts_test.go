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
	regexp.MustCompile(`!\s*kubectl\b[^|;]*\bget\b`),
	regexp.MustCompile(`-z\s*\\?"\\?\$\(\s*kubectl\b`),
	// Errors thrown away: 2>/dev/null, &>/dev/null, >/dev/null 2>&1.
	regexp.MustCompile(`kubectl\b[^|;]*\bget\b[^|;]*(2>\s*/dev/null|&>\s*/dev/null|>\s*/dev/null\s*2>&1)`),
	// A count of a listing compared with zero: a failed kubectl counts 0, which reads as "none".
	regexp.MustCompile(`kubectl\b[^|;]*\bget\b[^|;]*\|\s*(wc\s+-l|grep\s+-c)[^;]*(-eq\s*\\?"?0\b|-lt\s*\\?"?1\b|=\s*\\?"?0\b)`),
	// An error taken for success.
	regexp.MustCompile(`kubectl\b[^|;]*\bget\b[^|;]*\|\|\s*(true|exit 0)`),
}

// overrides are script fields and lines that take the exit status out of the script's hands.
var overrides = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^\s*set\s+\+[a-z]*e`),
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
	for _, re := range overrides {
		if re.MatchString(content) {
			problems = append(problems, "turns -e off again: "+re.FindString(content))
		}
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
// cleanup alike). A script with a `check` (which replaces its exit status) or a `command` step (which has no
// script to start with `set -eu`) is returned as a problem instead.
func scripts(node any) (contents, problems []string) {
	switch n := node.(type) {
	case map[string]any:
		if s, ok := n["script"].(map[string]any); ok {
			if c, ok := s["content"].(string); ok {
				contents = append(contents, c)
			}
			if _, ok := s["check"]; ok {
				problems = append(problems, "a script with `check:` is judged by that check, not by its exit status")
			}
		}
		if _, ok := n["command"].(map[string]any); ok {
			problems = append(problems, "a `command:` step: write it as a script starting with `set -eu`")
		}
		for _, v := range n {
			c, p := scripts(v)
			contents, problems = append(contents, c...), append(problems, p...)
		}
	case []any:
		for _, v := range n {
			c, p := scripts(v)
			contents, problems = append(contents, c...), append(problems, p...)
		}
	}
	return contents, problems
}

// documents splits a YAML file into its documents (a file may hold several tests).
func documents(data []byte) []string {
	var out []string
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(doc) != "" {
			out = append(out, doc)
		}
	}
	return out
}

// Every chainsaw script starts with `set -eu` and asserts absence by a NotFound answer, never by a failed or empty
// kubectl call; e2e/lib.sh follows the same rule.
func TestE2EScriptsFailOnTheFirstFailedCheck(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../e2e/*/chainsaw-test.y*ml", "../e2e/*/*/chainsaw-test.y*ml"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d chainsaw tests under e2e/: %v", len(files), files)
	}
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range documents(data) {
			var doc any
			if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			contents, problems := scripts(doc)
			for _, p := range problems {
				t.Errorf("%s: %s", f, p)
			}
			for i, c := range contents {
				total++
				for _, p := range scriptProblems(c) {
					t.Errorf("%s: script %d %s", f, i+1, p)
				}
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
		"errors merged away": "set -eu\nkubectl get pv x >/dev/null 2>&1 || echo gone\n",
		"errors &>":          "set -eu\nkubectl get pv x &>/dev/null || echo gone\n",
		"counted listing":    "set -eu\n[ \"$(kubectl get pods -o name | wc -l)\" -eq 0 ]\n",
		"error as success":   "set -eu\nkubectl get pv x || true\n",
		"set +e later":       "set -eu\nset +e\nkubectl get pods\n",
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

// The walk finds scripts in every document and refuses steps whose status the script does not decide.
func TestScriptsWalkRefusesCheckAndCommand(t *testing.T) {
	docs := documents([]byte("a: 1\n---\nspec: {steps: [{try: [{script: {content: x, check: {($error == null): true}}}]}]}\n---\n" +
		"spec: {steps: [{finally: [{command: {entrypoint: kubectl}}]}]}\n"))
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3", len(docs))
	}
	var problems []string
	for _, text := range docs {
		var doc any
		if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatal(err)
		}
		_, p := scripts(doc)
		problems = append(problems, p...)
	}
	if len(problems) != 2 {
		t.Errorf("problems %q, want one for check: and one for command:", problems)
	}
}
