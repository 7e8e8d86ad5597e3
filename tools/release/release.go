package main

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"
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
	// Signer signs every image, index and the chart, and their SBOM and provenance attestations (cosign's
	// formats). Nil pushes them unsigned, which Unsigned must then say.
	Signer signature.SignerVerifier
	// Unsigned allows a release without a Signer (a registry on this machine, a test).
	Unsigned bool
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
	// Platforms maps each binary to its per-platform images, by digest.
	Platforms map[string][]platformImage
}

// ChartRepository is the chart's repository (without a tag), the oci:// reference `helm install` takes.
func (r *Result) ChartRepository() string { return r.Chart.Context().Name() }

func (r Release) logf(format string, args ...any) {
	if r.Log != nil {
		_, _ = fmt.Fprintf(r.Log, "release: "+format+"\n", args...)
	}
}

// remoteOptions are the options of every registry call: the context, and Docker's credentials.
func (r Release) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
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

// platformImage is one platform's image of an index: where it is, and the binary it holds (for its SBOM).
type platformImage struct {
	Platform v1.Platform
	Digest   name.Digest
	Binary   string
}
