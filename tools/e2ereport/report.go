package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// report is the part of chainsaw's JSON report (pkg/report/json.go) that says what failed.
type report struct {
	Tests []struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Steps     []struct {
			Name       string `json:"name"`
			Operations []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Failure *struct {
					Err string `json:"error"`
				} `json:"failure"`
			} `json:"operations"`
		} `json:"steps"`
	} `json:"tests"`
}

// failure is one failed operation.
type failure struct {
	Test, Namespace, Step, Operation, Err string
}

// maxErrorLines bounds each error in the summary: an assertion's error holds the whole diff of its resource.
const maxErrorLines = 25

// readFailures reads every *.json report in dir, in name order, and returns their failed operations in order.
func readFailures(dir string) ([]failure, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []failure
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		fs, err := failures(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, fs...)
	}
	return out, nil
}

// failures returns the failed operations of one report.
func failures(data []byte) ([]failure, error) {
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	var out []failure
	for _, t := range r.Tests {
		for _, s := range t.Steps {
			for _, o := range s.Operations {
				if o.Failure == nil {
					continue
				}
				name := o.Type
				if o.Name != "" {
					name += " " + o.Name
				}
				out = append(out, failure{Test: t.Name, Namespace: t.Namespace, Step: s.Name, Operation: name, Err: o.Failure.Err})
			}
		}
	}
	return out, nil
}

// summary is the closing lines of the log: one block per failed operation, its error cut to maxErrorLines.
func summary(fs []failure) string {
	if len(fs) == 0 {
		return "==> no failed operation in the reports\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "==> %d failed operation(s)\n", len(fs))
	for _, f := range fs {
		lines := strings.Split(strings.TrimRight(f.Err, "\n"), "\n")
		if len(lines) > maxErrorLines {
			lines = append(lines[:maxErrorLines], fmt.Sprintf("… %d more lines", len(lines)-maxErrorLines))
		}
		fmt.Fprintf(&b, "FAILED %s (namespace %s), step %q, %s:\n    %s\n", f.Test, f.Namespace, f.Step, f.Operation,
			strings.Join(lines, "\n    "))
	}
	return b.String()
}
