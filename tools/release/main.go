// Command release builds Keelson's images for every platform, pushes each controller's images under one tag as
// an OCI image index, then packages the chart and pushes it as an OCI artifact. The version of everything is the
// chart's appVersion (charts/keelson/Chart.yaml): the tag the chart pulls by default, and what the binaries'
// --version prints. `make release REGISTRY=...` runs it; see docs/chart.md.
//
//	bin/tools/release --registry ghcr.io/acme --tini-amd64 /usr/bin/tini-static --tini-arm64 <path>
//
// Run it from the repository's root; make builds it into bin/tools/ (go -C tools build -o ../bin/tools/release ./release).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func run() error {
	r := Release{Root: ".", ChartDir: "charts/keelson", Binaries: defaultBinaries, Platforms: defaultPlatforms, Tini: map[string]string{},
		Log: os.Stderr}
	flag.StringVar(&r.Registry, "registry", "", "registry and path the images and the chart go to, e.g. ghcr.io/acme (required)")
	flag.StringVar(&r.Repository, "repository", "keelson", "repository under the registry: images <registry>/<repository>/<binary>, chart <registry>/<repository>/charts/keelson")
	flag.StringVar(&r.GitCommit, "git-commit", "unknown", "commit stamped into the binaries")
	flag.StringVar(&r.BuildDate, "build-date", "unknown", "build date stamped into the binaries (the commit's, so builds are reproducible)")
	flag.BoolVar(&r.PlainHTTP, "plain-http", false, "talk plain HTTP to the registry (a registry on this machine or in a test)")
	key := flag.String("signing-key", "", "private key that signs the images, the chart and their SBOM and provenance "+
		"attestations, in cosign's formats: a PEM key, or one of `cosign generate-key-pair` (its password in COSIGN_PASSWORD)")
	flag.BoolVar(&r.Unsigned, "unsigned", false, "push without signatures and attestations (a registry on this machine)")
	for _, p := range defaultPlatforms {
		flag.Func("tini-"+p.Architecture, "path of Debian's tini-static for "+p.Architecture+" (tools/install.sh tini-"+p.Architecture+")",
			func(s string) error { r.Tini[p.Architecture] = s; return nil })
	}
	flag.Parse()
	if r.Registry == "" {
		return fmt.Errorf("--registry is required")
	}
	r.Registry = strings.TrimSuffix(r.Registry, "/")
	if *key != "" {
		sv, err := loadSigner(*key)
		if err != nil {
			return err
		}
		r.Signer = sv
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := r.Run(ctx)
	if err != nil {
		return err
	}
	for _, b := range r.Binaries {
		fmt.Println(res.Images[b])
	}
	fmt.Println(res.Chart)
	fmt.Fprintf(os.Stderr, "\ninstall it:\n  helm install keelson oci://%s --version %s -n keelson-system --create-namespace --set global.image.registry=%s --set global.image.repository=%s\n",
		res.ChartRepository(), res.ChartVersion, r.Registry, r.Repository)
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}
