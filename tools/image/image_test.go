//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// readArchive opens an OCI archive and returns its files.
func readArchive(t *testing.T, archive []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
}

// blob returns the blob of digest d from an archive's files, checking its content against the digest. The archive
// is read as plain JSON and tar, not with the library that wrote it, so a fault there cannot hide here.
func blob(t *testing.T, files map[string][]byte, d string) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing", d)
	}
	sum := sha256.Sum256(b)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != d {
		t.Fatalf("blob %s has digest %s", d, got)
	}
	return b
}

// extractLayer unpacks a gzipped layer's regular files into root, each of which must be executable, and returns the
// layer's size uncompressed.
func extractLayer(t *testing.T, layer []byte, root string) int64 {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return total
		}
		if err != nil {
			t.Fatal(err)
		}
		total += h.Size
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s is not executable", h.Name)
		}
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(filepath.Join(root, h.Name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// The offline image of a real controller: a valid OCI layout whose config runs tini as PID 1 as user 65532, whose
// layer holds /tini and the binary, executable; the extracted image runs the controller's --version under tini.
func TestOfflineImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "daemonset-controller")
	// Built in the product's module, at the repository's root, as make build builds it.
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", bin, "./cmd/daemonset-controller")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binary, _ := os.ReadFile(bin)
	tini, err := os.ReadFile("/usr/bin/tini-static")
	if err != nil {
		t.Fatalf("Debian's tini is missing (make test installs it): %v", err)
	}
	archive, err := Build("daemonset-controller", binary, tini, "docker.io/keelson/daemonset-controller:test")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Build("daemonset-controller", binary, tini, "docker.io/keelson/daemonset-controller:test")
	if !bytes.Equal(archive, again) {
		t.Error("the same inputs gave a different archive: the build is not reproducible")
	}
	t.Logf("archive %.1f MB", float64(len(archive))/1e6)

	files := readArchive(t, archive)
	var index struct {
		Manifests []v1.Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if ref := index.Manifests[0].Annotations["io.containerd.image.name"]; ref != "docker.io/keelson/daemonset-controller:test" {
		t.Errorf("image name %q", ref)
	}
	var manifest struct {
		Config v1.Descriptor   `json:"config"`
		Layers []v1.Descriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(t, files, index.Manifests[0].Digest.String()), &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			User       string
			Entrypoint []string
		} `json:"config"`
	}
	if err := json.Unmarshal(blob(t, files, manifest.Config.Digest.String()), &config); err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || config.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", config.OS, config.Architecture, runtime.GOARCH)
	}
	if config.Config.User != "65532:65532" {
		t.Errorf("user %q", config.Config.User)
	}
	if diff := cmp.Diff([]string{"/tini", "--", "/daemonset-controller"}, config.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}

	layer := blob(t, files, manifest.Layers[0].Digest.String())
	if len(layer) > 40<<20 {
		t.Errorf("the image is %d MB compressed, over 40 MB", len(layer)>>20)
	}
	root := t.TempDir()
	if total := extractLayer(t, layer, root); total > 40<<20 {
		t.Errorf("the image is %d MB uncompressed, over 40 MB", total>>20)
	}
	// tini -s: a subreaper, since the test is not PID 1 of a container.
	out, err := exec.Command(filepath.Join(root, "tini"), "-s", "--", filepath.Join(root, "daemonset-controller"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "daemonset-controller ") {
		t.Fatalf("tini -- daemonset-controller --version: %v\n%s", err, out)
	}
}
