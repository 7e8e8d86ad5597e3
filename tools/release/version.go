package main

import (
	"fmt"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// versionPackage receives the version at link time, as the Makefile's LDFLAGS stamp it.
const versionPackage = "github.com/keelson-dev/keelson/cmd/internal/version"

// chartMetadata reads the chart's Chart.yaml: its appVersion is the one version of a release (images, binaries,
// chart), its version the chart's own.
func chartMetadata(chartDir string) (*chart.Metadata, error) {
	meta, err := chartutil.LoadChartfile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	if meta.AppVersion == "" || meta.Version == "" {
		return nil, fmt.Errorf("%s/Chart.yaml needs both version and appVersion", chartDir)
	}
	return meta, nil
}

// ldflags stamps the version information into a binary, stripped as make build strips it.
func ldflags(version, commit, date string) string {
	return fmt.Sprintf("-s -w -X %[1]s.Version=%[2]s -X %[1]s.GitCommit=%[3]s -X %[1]s.BuildDate=%[4]s", versionPackage, version, commit, date)
}
