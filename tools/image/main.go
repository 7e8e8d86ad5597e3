// Command image assembles a Keelson controller image without Docker or a registry: an OCI image archive with one
// layer holding /tini (Debian's tini-static) and /<binary>, run as user 65532 with tini as PID 1 — the same layout
// the Dockerfile builds. `ctr images import` loads the archive into a node's containerd.
//
//	go run ./tools/image --binary bin/daemonset-controller --tini /usr/bin/tini-static \
//	    --ref docker.io/keelson/daemonset-controller:dev --out bin/images/daemonset-controller.tar
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The image layout, shared with the Dockerfile (dockerfile_test.go checks it).
const (
	// TiniPath is where tini sits in the image.
	TiniPath = "/tini"
	// User runs the controller: non-root, the same UID and GID as distroless' nonroot.
	User = "65532:65532"
)

// Entrypoint is the image's entrypoint for a binary: tini as PID 1 (it reaps zombies and forwards signals, so
// SIGTERM reaches the controller and a graceful shutdown releases the leader lease), then the controller.
func Entrypoint(binary string) []string { return []string{TiniPath, "--", "/" + binary} }

// epoch stamps every file and the config: the same inputs give the same image digest.
var epoch = time.Unix(0, 0).UTC()

// file is one file of the layer.
type file struct {
	path string // in the image, without the leading slash
	mode int64
	data []byte
}

// buildLayer writes an uncompressed tar of files, directories first.
func buildLayer(files []file) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch, Format: tar.FormatPAX})
	for _, f := range files {
		_ = tw.WriteHeader(&tar.Header{Name: f.path, Typeflag: tar.TypeReg, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: epoch, Format: tar.FormatPAX})
		_, _ = tw.Write(f.data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Build assembles the OCI image layout of binary (named name in the image) with tini, as a tar archive.
func Build(name string, binary, tini []byte, ref string) ([]byte, error) {
	layer := buildLayer([]file{
		{path: TiniPath[1:], mode: 0o755, data: tini},
		{path: name, mode: 0o755, data: binary},
	})
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(layer); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	config, err := json.Marshal(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": "amd64",
		"os":           "linux",
		"config": map[string]any{
			"User":       User,
			"Entrypoint": Entrypoint(name),
			"Env":        []string{"PATH=/"},
			"WorkingDir": "/",
			"Labels":     map[string]string{"org.opencontainers.image.title": name, "org.opencontainers.image.source": "https://github.com/keelson-dev/keelson"},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{digest(layer)}},
		"history": []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "keelson tools/image"}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: digest(gz.Bytes()), Size: gz.Len()}},
	})
	if err != nil {
		return nil, err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest), Size: len(manifest),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}}},
	})
	if err != nil {
		return nil, err
	}

	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	add := func(name string, data []byte) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch})
		_, _ = tw.Write(data)
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, blob := range [][]byte{config, manifest, gz.Bytes()} {
		add("blobs/sha256/"+digest(blob)[len("sha256:"):], blob)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func run() error {
	binaryPath := flag.String("binary", "", "path of the controller binary (its base name names it in the image)")
	tiniPath := flag.String("tini", "/usr/bin/tini-static", "path of a static tini (Debian: apt-get install tini)")
	ref := flag.String("ref", "", "image reference, e.g. docker.io/keelson/daemonset-controller:dev")
	out := flag.String("out", "", "where to write the OCI archive")
	flag.Parse()
	if *binaryPath == "" || *ref == "" || *out == "" {
		return fmt.Errorf("--binary, --ref and --out are required")
	}
	binary, err := os.ReadFile(*binaryPath)
	if err != nil {
		return err
	}
	tini, err := os.ReadFile(*tiniPath)
	if err != nil {
		return fmt.Errorf("%w (install Debian's tini package: apt-get install tini)", err)
	}
	archive, err := Build(filepath.Base(*binaryPath), binary, tini, *ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*out, archive, 0o644); err != nil {
		return err
	}
	_, err = fmt.Fprintf(io.Writer(os.Stdout), "%s: %s (%.1f MB)\n", *ref, *out, float64(len(archive))/1e6)
	return err
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
