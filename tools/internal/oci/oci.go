// Package oci writes single-layer OCI image archives without Docker or a registry: the controller images, and the
// pause, CoreDNS and test images the local cluster needs. `ctr images import` loads an archive into a containerd.
package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// epoch stamps every file and the config: the same inputs give the same image digest.
var epoch = time.Unix(0, 0).UTC()

// File is one regular file of the image's layer.
type File struct {
	// Path in the image, with or without the leading slash.
	Path string
	// Mode holds the permission bits, e.g. 0o755.
	Mode int64
	// Data is the file's content.
	Data []byte
}

// Config is the part of the image configuration a container runtime reads.
type Config struct {
	// User runs the entrypoint, "uid:gid"; empty means root.
	User string
	// Entrypoint is the command the container runs.
	Entrypoint []string
	// Env holds KEY=value pairs; PATH=/ when empty.
	Env []string
	// Labels annotate the image.
	Labels map[string]string
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	// MediaType of the content.
	MediaType string `json:"mediaType"`
	// Digest of the content, sha256:<hex>.
	Digest string `json:"digest"`
	// Size of the content in bytes.
	Size int `json:"size"`
	// Annotations carry the image name in an index.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Digest returns the sha256 digest of b in OCI form.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// layer writes an uncompressed tar of files: /tmp first (world-writable, as programs expect), then every parent
// directory, then the files, all sorted so the archive is reproducible.
func layer(files []File) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{"tmp/": true}
	for _, f := range files {
		p := strings.TrimPrefix(f.Path, "/")
		for i := strings.Index(p, "/"); i >= 0; i = next(p, i) {
			dirs[p[:i+1]] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		_ = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Typeflag: tar.TypeReg, Mode: f.Mode,
			Size: int64(len(f.Data)), ModTime: epoch, Format: tar.FormatPAX})
		_, _ = tw.Write(f.Data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// next returns the index of the next "/" in p after i, or -1.
func next(p string, i int) int {
	j := strings.Index(p[i+1:], "/")
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// Build assembles an OCI image layout holding files in one gzip layer, named ref, as a tar archive.
func Build(ref string, files []File, cfg Config) ([]byte, error) {
	raw := layer(files)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	env := cfg.Env
	if len(env) == 0 {
		env = []string{"PATH=/"}
	}
	imageConfig := map[string]any{"Entrypoint": cfg.Entrypoint, "Env": env, "WorkingDir": "/"}
	if cfg.User != "" {
		imageConfig["User"] = cfg.User
	}
	if len(cfg.Labels) > 0 {
		imageConfig["Labels"] = cfg.Labels
	}
	config, err := json.Marshal(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": "amd64",
		"os":           "linux",
		"config":       imageConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{Digest(raw)}},
		"history":      []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "keelson tools/internal/oci"}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        Descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: Digest(config), Size: len(config)},
		"layers":        []Descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: Digest(gz.Bytes()), Size: gz.Len()}},
	})
	if err != nil {
		return nil, err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []Descriptor{{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: Digest(manifest), Size: len(manifest),
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
		add("blobs/sha256/"+Digest(blob)[len("sha256:"):], blob)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
