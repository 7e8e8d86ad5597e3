//go:build integration

package apis_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestModuleImportsOnlyAllowedPackages lists every package of the module (tests included) with `go list` and fails
// on any import outside the allowed set, naming the package that imports it.
func TestModuleImportsOnlyAllowedPackages(t *testing.T) {
	cmd := exec.Command("go", "list", "-f",
		`{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`,
		"./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	packages := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		packages++
		for _, imp := range fields[1:] {
			if !allowedImport(imp) {
				t.Errorf("%s imports %s: the API module may import only the standard library, k8s.io/api, "+
					"k8s.io/apimachinery and sigs.k8s.io/controller-runtime/pkg/scheme", fields[0], imp)
			}
		}
	}
	// The module has a root package and three group-versions; fewer means go list did not see them.
	if packages < 4 {
		t.Fatalf("go list saw %d packages, want at least 4:\n%s", packages, out)
	}
}
