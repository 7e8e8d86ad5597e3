// Command e2ereport says, at the end of an end-to-end run's log, what failed: for every failed chainsaw operation
// (from chainsaw's JSON reports) its test, namespace, step and error, after the diagnosis e2e/diagnose.sh wrote for
// that test's namespace. A CI log is often read from its end; this puts the cause there.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	reports := flag.String("reports", "", "the directory of chainsaw's JSON reports (--report-format JSON)")
	diagnoses := flag.String("diagnoses", "", "the directory of e2e/diagnose.sh's files, one per test namespace")
	flag.Parse()
	failures, err := readFailures(*reports)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2ereport:", err)
		os.Exit(1)
	}
	seen := map[string]bool{}
	for _, f := range failures {
		if f.Namespace == "" || seen[f.Namespace] {
			continue
		}
		seen[f.Namespace] = true
		data, err := os.ReadFile(filepath.Join(*diagnoses, f.Namespace+".txt"))
		if err != nil {
			fmt.Printf("==> no diagnosis of namespace %s: %v\n", f.Namespace, err)
			continue
		}
		fmt.Printf("==> diagnosis of %s (test %s), taken when it failed\n%s\n", f.Namespace, f.Test,
			strings.TrimRight(string(data), "\n"))
	}
	fmt.Print(summary(failures))
}
