package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The controllers and platforms a release builds.
var (
	defaultBinaries  = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}
	defaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
)

// Release is one run of the release: what to build, and where it goes.
type Release struct {
	// Root is the root of the Go module the binaries are built from.
	Root string
	// ChartDir is the chart, relative to Root; its appVersion is the version of everything released.
	ChartDir string
	// Registry is the registry host with an optional path, e.g. ghcr.io/acme.
	Registry string
	// Repository is the path under Registry: images <Registry>/<Repository>/<binary>, the chart
	// <Registry>/<Repository>/charts/<chart name>. The chart's global.image.repository value names it.
	Repository string
	// Binaries are the controllers under cmd/ to build and push.
	Binaries []string
	// Platforms each image index holds.
	Platforms []v1.Platform
	// Tini maps an architecture to the path of Debian's tini-static built for it.
	Tini map[string]string
	// GitCommit and BuildDate are stamped into the binaries next to the version.
	GitCommit, BuildDate string
	// PlainHTTP talks HTTP, not HTTPS, to the registry.
	PlainHTTP bool
	// Log receives progress lines.
	Log io.Writer
}

// Result is what a release pushed.
type Result struct {
	// Version is the chart's appVersion: every image's tag and what the binaries report.
	Version string
	// ChartVersion is the chart's version, its tag in the registry.
	ChartVersion string
	// Images maps each binary to its pushed index, by digest.
	Images map[string]name.Digest
	// Chart is the pushed chart, by digest.
	Chart name.Digest
}

// ChartRepository is the chart's repository (without a tag), the oci:// reference `helm install` takes.
func (r *Result) ChartRepository() string { return r.Chart.Context().Name() }

func (r Release) logf(format string, args ...any) {
	if r.Log != nil {
		_, _ = fmt.Fprintf(r.Log, "release: "+format+"\n", args...)
	}
}

// Run builds every binary for every platform, pushes one image index per binary tagged with the chart's
// appVersion, then packages and pushes the chart. Images go first: a pushed chart names images that exist.
func (r Release) Run(ctx context.Context) (*Result, error) {
	start := time.Now()
	meta, err := chartMetadata(path.Join(r.Root, r.ChartDir))
	if err != nil {
		return nil, err
	}
	for _, p := range r.Platforms {
		if _, err := os.Stat(r.Tini[p.Architecture]); err != nil {
			return nil, fmt.Errorf("tini for %s: %w (tools/install.sh tini-%s fetches Debian's)", p.Architecture, err, p.Architecture)
		}
	}
	work, err := os.MkdirTemp("", "keelson-release-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()

	res := &Result{Version: meta.AppVersion, ChartVersion: meta.Version, Images: map[string]name.Digest{}}
	for _, b := range r.Binaries {
		ref, err := r.imageRef(b, meta.AppVersion)
		if err != nil {
			return nil, err
		}
		if res.Images[b], err = r.pushImage(ctx, work, b, ref); err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		r.logf("pushed %s", res.Images[b])
	}
	if res.Chart, err = r.pushChart(ctx, work); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	r.logf("pushed %s (%s in all)", res.Chart, time.Since(start).Round(time.Second))
	return res, nil
}

// nameOptions parse references to the release's registry: plain HTTP where asked.
func (r Release) nameOptions() []name.Option {
	if r.PlainHTTP {
		return []name.Option{name.Insecure}
	}
	return nil
}

// imageRef is where binary's images go: <registry>/<repository>/<binary>:<version>, as the chart composes it.
func (r Release) imageRef(binary, version string) (name.Tag, error) {
	return name.NewTag(fmt.Sprintf("%s/%s/%s:%s", r.Registry, r.Repository, binary, version), r.nameOptions()...)
}
