package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch stamps every file, the config and the history: the same inputs give the same image digest.
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

// Layer returns one gzip layer holding files. go-containerregistry has no helper that writes a layer from files
// with chosen modes and parent directories (crane.Layer writes every file 0644, without directories), so the tar
// is written here: /tmp first (world-writable, as programs expect), then every parent directory, then the files,
// sorted and stamped with the epoch so the layer is reproducible. It is compressed once, at the best level, and
// handed to go-containerregistry compressed, so pushing and archiving never compress it again.
func Layer(files []File) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dirs := map[string]bool{"tmp/": true}
	for _, f := range files {
		p := strings.TrimPrefix(f.Path, "/")
		for i := strings.Index(p, "/"); i >= 0; i = next(p, i) {
			dirs[p[:i+1]] = true
		}
	}
	names := slices.Sorted(maps.Keys(dirs))
	for _, d := range names {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Typeflag: tar.TypeReg, Mode: f.Mode,
			Size: int64(len(f.Data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(compressed)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// next returns the index of the next "/" in p after i, or -1.
func next(p string, i int) int {
	j := strings.Index(p[i+1:], "/")
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
