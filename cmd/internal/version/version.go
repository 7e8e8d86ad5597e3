// Package version holds the build information stamped into every Keelson binary by `make build`
// (-ldflags "-X github.com/keelson-dev/keelson/cmd/internal/version.Version=...").
package version

import (
	"fmt"
	"runtime"
)

// Stamped at link time; the defaults are what a plain `go build` produces.
var (
	// Version is the release version: the chart's appVersion, e.g. 0.1.0, which is also the images' tag, so that
	// a binary, its image and the chart that runs it name one version. GitCommit tells two builds of it apart.
	Version = "v0.0.0-dev"
	// GitCommit is the full commit hash the binary was built from.
	GitCommit = "unknown"
	// BuildDate is the UTC build time in RFC 3339 form.
	BuildDate = "unknown"
)

// String returns one human-readable line naming the binary and everything stamped into it.
func String(binary string) string {
	return fmt.Sprintf("%s %s (commit %s, built %s, %s %s/%s)",
		binary, Version, GitCommit, BuildDate, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
