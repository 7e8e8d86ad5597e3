//go:build integration

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// One version everywhere: the chart's appVersion is the tag `make docker-build` and `make image-local` give the
// images, what `make build` stamps into the binaries, and the tag the chart pulls when no value overrides it; the
// release reads the same field. If any of them drifts, a user who builds and installs gets ImagePullBackOff.
func TestMakeTagsWhatTheChartPulls(t *testing.T) {
	meta, err := chartMetadata("../../charts/keelson")
	if err != nil {
		t.Fatal(err)
	}
	v := meta.AppVersion
	// -n prints the commands without running them; -B so no target is skipped as up to date.
	out, err := exec.Command("make", "-C", "../..", "-n", "-B", "--no-print-directory", "docker-build", "image-local", "release",
		"REGISTRY=registry.example/acme").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	cmds := string(out)
	for _, b := range defaultBinaries {
		for _, want := range []string{
			"-t docker.io/keelson/" + b + ":" + v + " ",    // docker-build
			"--ref docker.io/keelson/" + b + ":" + v + " ", // image-local
		} {
			if !strings.Contains(cmds, want) {
				t.Errorf("make does not run %q:\n%s", want, cmds)
			}
		}
	}
	for _, want := range []string{
		"--build-arg VERSION=" + v + " ",          // the binaries in Docker's images
		"cmd/internal/version.Version=" + v + " ", // make build, which image-local packs
		"/tools/release --registry registry.example/acme ",
	} {
		if !strings.Contains(cmds, want) {
			t.Errorf("make does not run %q:\n%s", want, cmds)
		}
	}

	chrt, err := loader.Load("../../charts/keelson")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range defaultBinaries {
		want = append(want, "docker.io/keelson/"+b+":"+v)
	}
	slices.Sort(want)
	if got := renderedImages(t, chrt, nil); !slices.Equal(got, want) {
		t.Errorf("the chart pulls %v by default, make tags %v", got, want)
	}
}
