package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
)

// tiniFor returns Debian's tini-static for arch, fetched by the installer the Makefile uses (cached in bin/).
func tiniFor(t *testing.T, arch string) string {
	t.Helper()
	out, err := exec.Command("../install.sh", "tini-"+arch).Output()
	if err != nil {
		t.Fatalf("tools/install.sh tini-%s: %v", arch, err)
	}
	return strings.TrimSpace(string(out))
}

// files extracts the regular files of an image's layers.
func files(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s is not executable", h.Name)
			}
			out[h.Name], _ = io.ReadAll(tr)
		}
	}
}

// machines maps a Go architecture to the ELF machine its binaries carry.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// The release end to end, against a registry served in this process: every controller's index holds an image
// for linux/amd64 and linux/arm64, each with tini as PID 1, user 65532, and a binary and a tini of its own
// architecture; the image of this machine's architecture runs and reports the chart's appVersion; the chart
// pulled back as OCI carries that appVersion and, installed with the release's registry, renders exactly the
// pushed references, which resolve to the pushed indexes.
func TestReleasePushesMultiArchImagesAndTheChart(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/acme"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	r := Release{Root: "../..", ChartDir: "charts/keelson", Registry: reg, Repository: "keelson", Binaries: defaultBinaries,
		Platforms: defaultPlatforms, Tini: map[string]string{}, GitCommit: "0123abc", BuildDate: "2026-01-01T00:00:00Z",
		PlainHTTP: true, Log: testWriter{t}}
	for _, p := range defaultPlatforms {
		r.Tini[p.Architecture] = tiniFor(t, p.Architecture)
	}
	start := time.Now()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release of %d images x %d platforms and the chart: %s", len(r.Binaries), len(r.Platforms), time.Since(start).Round(time.Second))
	meta, err := chartMetadata("../../charts/keelson")
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != meta.AppVersion {
		t.Fatalf("released version %s, the chart's appVersion is %s", res.Version, meta.AppVersion)
	}

	for _, b := range r.Binaries {
		tag, _ := name.NewTag(reg+"/keelson/"+b+":"+meta.AppVersion, name.Insecure)
		idx, err := remote.Index(tag, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("pull %s: %v", tag, err)
		}
		d, _ := idx.Digest()
		if d.String() != res.Images[b].DigestStr() {
			t.Errorf("%s: the tag serves %s, the release pushed %s", b, d, res.Images[b].DigestStr())
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, m := range im.Manifests {
			platforms = append(platforms, m.Platform.String())
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			where := b + " " + m.Platform.String()
			if cf.Architecture != m.Platform.Architecture || cf.OS != "linux" {
				t.Errorf("%s: the config says %s/%s", where, cf.OS, cf.Architecture)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("%s: user %q", where, cf.Config.User)
			}
			if diff := cmp.Diff([]string{"/tini", "--", "/" + b}, cf.Config.Entrypoint); diff != "" {
				t.Errorf("%s: entrypoint (-want +got):\n%s", where, diff)
			}
			layers, _ := img.Layers()
			var compressed int64
			for _, l := range layers {
				s, _ := l.Size()
				compressed += s
			}
			fs := files(t, img)
			for _, f := range []string{"tini", b} {
				ef, err := elf.NewFile(bytes.NewReader(fs[f]))
				if err != nil {
					t.Errorf("%s: /%s is not an ELF binary: %v", where, f, err)
					continue
				}
				if want := machines[m.Platform.Architecture]; ef.Machine != want {
					t.Errorf("%s: /%s is built for %s, want %s", where, f, ef.Machine, want)
				}
			}
			t.Logf("%s: %.1f MB compressed, %.1f MB unpacked", where, float64(compressed)/1e6, float64(len(fs["tini"])+len(fs[b]))/1e6)
			if m.Platform.Architecture == runtime.GOARCH {
				root := t.TempDir()
				for f, data := range fs {
					if err := os.WriteFile(filepath.Join(root, f), data, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				// tini -s: a subreaper, since the test is not PID 1 of a container.
				out, err := exec.Command(filepath.Join(root, "tini"), "-s", "--", filepath.Join(root, b), "--version").CombinedOutput()
				if err != nil || !strings.HasPrefix(string(out), b+" "+meta.AppVersion+" (commit 0123abc") {
					t.Errorf("%s: tini -- %s --version: %v\n%s", where, b, err, out)
				}
			}
		}
		slices.Sort(platforms)
		if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
			t.Errorf("%s: platforms (-want +got):\n%s", b, diff)
		}
	}

	// The chart, pulled back as `helm pull oci://...` would.
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	if err != nil {
		t.Fatal(err)
	}
	chartRef := reg + "/keelson/charts/keelson:" + meta.Version
	if res.Chart.Context().Name()+":"+meta.Version != chartRef {
		t.Errorf("chart pushed to %s, want %s", res.Chart, chartRef)
	}
	pulled, err := client.Pull(chartRef, helmregistry.PullOptWithChart(true))
	if err != nil {
		t.Fatalf("helm pull oci://%s: %v", chartRef, err)
	}
	if pulled.Manifest.Digest != res.Chart.DigestStr() {
		t.Errorf("the chart's tag serves %s, the release pushed %s", pulled.Manifest.Digest, res.Chart.DigestStr())
	}
	chrt, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil {
		t.Fatal(err)
	}
	if chrt.Metadata.AppVersion != meta.AppVersion {
		t.Errorf("the pushed chart's appVersion is %s, want %s", chrt.Metadata.AppVersion, meta.AppVersion)
	}
	images := renderedImages(t, chrt, map[string]any{"global": map[string]any{"image": map[string]any{"registry": reg}}})
	var want []string
	for _, b := range r.Binaries {
		want = append(want, reg+"/keelson/"+b+":"+meta.AppVersion)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, images); diff != "" {
		t.Errorf("the pulled chart's images (-want +got):\n%s", diff)
	}
	for _, ref := range images {
		tag, _ := name.NewTag(ref, name.Insecure)
		desc, err := remote.Head(tag, remote.WithContext(ctx))
		if err != nil {
			t.Errorf("the chart names %s, which the registry lacks: %v", ref, err)
			continue
		}
		if b := path.Base(tag.RepositoryStr()); desc.Digest.String() != res.Images[b].DigestStr() {
			t.Errorf("%s resolves to %s, the release pushed %s", ref, desc.Digest, res.Images[b])
		}
	}
}

// testWriter sends the release's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
