//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
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
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
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
	if _, err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "no signing key") {
		t.Fatalf("a release without a key and without --unsigned: %v, want a refusal", err)
	}
	r.Signer, r.Unsigned = signingKey(t), false
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

	shipped := map[string][]byte{} // "<binary> <platform>" → the binary in that image
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
			where, binary := checkPlatformImage(t, idx, m, b, meta.AppVersion)
			shipped[where] = binary
		}
		slices.Sort(platforms)
		if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
			t.Errorf("%s: platforms (-want +got):\n%s", b, diff)
		}
	}

	checkPulledChart(ctx, t, r, res, reg, meta.Version, meta.AppVersion)
	checkSigned(ctx, t, r, res, shipped)
}

// checkPulledChart pulls the chart back as `helm pull oci://...` would: the tag serves what the release pushed, of
// appVersion, and installed with the release's registry it renders exactly the pushed images' references, which
// resolve to the pushed indexes.
func checkPulledChart(ctx context.Context, t *testing.T, r Release, res *Result, reg, chartVersion, appVersion string) {
	t.Helper()
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	if err != nil {
		t.Fatal(err)
	}
	chartRef := reg + "/keelson/charts/keelson:" + chartVersion
	if res.Chart.Context().Name()+":"+chartVersion != chartRef {
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
	if chrt.Metadata.AppVersion != appVersion {
		t.Errorf("the pushed chart's appVersion is %s, want %s", chrt.Metadata.AppVersion, appVersion)
	}
	images := renderedImages(t, chrt, map[string]any{"global": map[string]any{"image": map[string]any{"registry": reg}}})
	var want []string
	for _, b := range r.Binaries {
		want = append(want, reg+"/keelson/"+b+":"+appVersion)
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
	// Last: it releases again, and overwrites a tag to see the next release refuse it.
}

// checkPlatformImage checks one platform's image of binary b in the pushed index: its config (platform, user,
// entrypoint under tini), that tini and the binary are built for the platform and, on this machine's, that the
// binary runs under tini and reports appVersion. It returns "<binary> <platform>" and the binary shipped.
func checkPlatformImage(t *testing.T, idx v1.ImageIndex, m v1.Descriptor, b, appVersion string) (string, []byte) {
	t.Helper()
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
		if err != nil || !strings.HasPrefix(string(out), b+" "+appVersion+" (commit 0123abc") {
			t.Errorf("%s: tini -- %s --version: %v\n%s", where, b, err, out)
		}
	}
	return where, fs[b]
}

// signingKey writes a key as `cosign generate-key-pair` does (encrypted, its password in COSIGN_PASSWORD) and loads
// it as the release does.
func signingKey(t *testing.T) signature.SignerVerifier {
	t.Helper()
	t.Setenv("COSIGN_PASSWORD", "release-test")
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("release-test")))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(path, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	sv, err := loadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}

// verifierOf is the public half of sv, as a user holding cosign.pub verifies with it.
func verifierOf(t *testing.T, sv signature.SignerVerifier) signature.Verifier {
	t.Helper()
	pub, err := sv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkSigned verifies, against the registry, that the release signed every index, every platform's image (both
// architectures) and the chart; that each platform image's SBOM is of the binary in that image (its SHA-256, the
// modules it links) and its provenance names its platform and commit; that another key verifies none of it; and
// that a second release of the same version is refused.
func checkSigned(ctx context.Context, t *testing.T, r Release, res *Result, binaries map[string][]byte) {
	pub := verifierOf(t, r.Signer)
	for _, b := range r.Binaries {
		got, err := Verify(ctx, pub, res.Images[b])
		if err != nil {
			t.Fatalf("%s index: %v", b, err)
		}
		if _, ok := got[slsaProvenancePredicateType]; !ok {
			t.Errorf("%s index: no provenance", b)
		}
		var archs []string
		for _, p := range res.Platforms[b] {
			where := b + " " + p.Platform.String()
			archs = append(archs, p.Platform.Architecture)
			got, err := Verify(ctx, pub, p.Digest)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			checkSBOM(t, where, b, res.Version, got[cycloneDXPredicateType], binaries[where])
			var prov provenance
			if err := json.Unmarshal(got[slsaProvenancePredicateType], &prov); err != nil {
				t.Fatalf("%s: provenance: %v", where, err)
			}
			if e := prov.BuildDefinition.ExternalParameters; e.Platform != p.Platform.String() || e.GitCommit != r.GitCommit || e.Version != res.Version {
				t.Errorf("%s: provenance says %+v", where, e)
			}
		}
		slices.Sort(archs)
		if diff := cmp.Diff([]string{"amd64", "arm64"}, archs); diff != "" {
			t.Errorf("%s: signed architectures (-want +got):\n%s", b, diff)
		}
	}
	got, err := Verify(ctx, pub, res.Chart)
	if err != nil {
		t.Fatalf("chart: %v", err)
	}
	if _, ok := got[slsaProvenancePredicateType]; !ok {
		t.Error("chart: no provenance")
	}
	// Someone else's key verifies nothing.
	other := verifierOf(t, signingKey(t))
	if _, err := Verify(ctx, other, res.Chart); err == nil {
		t.Error("the chart's signature verified with another key")
	}
	if _, err := Verify(ctx, other, res.Platforms[r.Binaries[0]][0].Digest); err == nil {
		t.Error("an image's signature verified with another key")
	}
	// A version is pushed once: its chart's tag says it is out.
	if _, err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "charts/keelson:"+res.ChartVersion+" is already pushed") {
		t.Errorf("a second release of the same version: %v, want a refusal naming the chart", err)
	}
	// An image tag holding anything but this build is never overwritten.
	tag, _ := name.NewTag(res.Images[r.Binaries[0]].Context().Name()+":"+res.Version, name.Insecure)
	foreign, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, foreign, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), tag.String()+" is already pushed, as sha256:") {
		t.Errorf("a release over another image's tag: %v, want a refusal naming it", err)
	}
}

// checkSBOM checks a platform image's SBOM (statement): it describes binary b of version, shipped in that image (its
// SHA-256), and lists the modules the binary links.
func checkSBOM(t *testing.T, where, b, version string, statement, binary []byte) {
	t.Helper()
	var bom struct {
		Metadata struct {
			Component struct {
				Name    string `json:"name"`
				Version string `json:"version"`
				Hashes  []struct {
					Content string `json:"content"`
				} `json:"hashes"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Purl string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(statement, &bom); err != nil {
		t.Fatalf("%s: SBOM: %v", where, err)
	}
	sum := sha256.Sum256(binary)
	if c := bom.Metadata.Component; c.Name != "github.com/keelson-dev/keelson/cmd/"+b || c.Version != version ||
		len(c.Hashes) != 1 || c.Hashes[0].Content != hex.EncodeToString(sum[:]) {
		t.Errorf("%s: the SBOM describes %+v, not the image's binary (sha256 %x)", where, c, sum)
	}
	var purls []string
	for _, c := range bom.Components {
		purls = append(purls, c.Purl)
	}
	if !slices.ContainsFunc(purls, func(p string) bool { return strings.HasPrefix(p, "pkg:golang/sigs.k8s.io/controller-runtime@v") }) ||
		!slices.ContainsFunc(purls, func(p string) bool { return strings.HasPrefix(p, "pkg:golang/stdlib@go") }) {
		t.Errorf("%s: the SBOM lacks the modules the binary links: %v", where, purls)
	}
}

// testWriter sends the release's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
