package oci

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Archive returns img as a tar archive of an OCI image layout that names it ref, the form `ctr images import`
// loads. go-containerregistry writes the layout (index.json, blobs); it writes it as a directory, so the
// directory is packed here, its entries sorted and stamped with the epoch so the archive is reproducible.
// containerd reads the name from io.containerd.image.name; other tools from org.opencontainers.image.ref.name.
func Archive(ref string, img v1.Image) ([]byte, error) {
	dir, err := os.MkdirTemp("", "keelson-oci-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref,
	})); err != nil {
		return nil, err
	}
	var files []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}); err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name, _ := filepath.Rel(dir, f)
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(name), Typeflag: tar.TypeReg, Mode: 0o644,
			Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
