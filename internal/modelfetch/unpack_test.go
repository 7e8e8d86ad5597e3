package modelfetch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// file is one archive entry: a regular file unless link is set.
type file struct {
	name, body, link string
	dir              bool
}

func tarGz(t *testing.T, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		switch {
		case f.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case f.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(f.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files ...file) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unpackBytes writes an archive to a file and unpacks it into a fresh directory.
func unpackBytes(t *testing.T, kind string, b []byte) (string, error) {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "archive")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, unpack(kind, file, dir, nil)
}

func TestUnpack(t *testing.T) {
	for kind, archive := range map[string][]byte{
		"tar.gz": tarGz(t, file{name: "weights/", dir: true}, file{name: "weights/a.bin", body: "AAA"}, file{name: "./config.json", body: "{}"}),
		"zip":    zipOf(t, file{name: "weights/a.bin", body: "AAA"}, file{name: "config.json", body: "{}"}),
	} {
		dir, err := unpackBytes(t, kind, archive)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for name, want := range map[string]string{"weights/a.bin": "AAA", "config.json": "{}"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
				t.Errorf("%s: %s = %q, %v; want %q", kind, name, b, err, want)
			}
		}
	}
}

// An archive with an entry that would land outside the model's directory, or a link, is refused whole, and
// nothing lands outside.
func TestUnpackRefusesUnsafeArchives(t *testing.T) {
	for name, tc := range map[string]struct {
		kind    string
		archive []byte
	}{
		"tar: parent":           {"tar.gz", tarGz(t, file{name: "ok.txt", body: "x"}, file{name: "../escaped.txt", body: "x"})},
		"tar: nested parent":    {"tar.gz", tarGz(t, file{name: "a/../../escaped.txt", body: "x"})},
		"tar: absolute":         {"tar.gz", tarGz(t, file{name: "/tmp/escaped.txt", body: "x"})},
		"tar: symlink":          {"tar.gz", tarGz(t, file{name: "link", link: "/etc/passwd"})},
		"tar: duplicate":        {"tar.gz", tarGz(t, file{name: "a", body: "x"}, file{name: "a", body: "y"})},
		"zip: parent":           {"zip", zipOf(t, file{name: "../escaped.txt", body: "x"})},
		"zip: windows parent":   {"zip", zipOf(t, file{name: "..\\escaped.txt", body: "x"})},
		"zip: windows absolute": {"zip", zipOf(t, file{name: "C:/escaped.txt", body: "x"})},
	} {
		dir, err := unpackBytes(t, tc.kind, tc.archive)
		if !errors.Is(err, errUnsafeArchive) || ReasonOf(err) != ReasonUnsafeArchive {
			t.Errorf("%s: err = %v, want an unsafe archive", name, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped.txt")); err == nil {
			t.Errorf("%s: a file landed outside the model's directory", name)
		}
	}
	if _, err := unpackBytes(t, "tar.gz", []byte("not gzip")); ReasonOf(err) != ReasonCorruptArchive {
		t.Errorf("a corrupt archive: %v", err)
	}
}

// A tarball made by git archive opens with a pax global header (metadata, no file): it unpacks.
func TestUnpackSkipsPaxGlobalHeaders(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": "0123abc"}}); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "m/w.bin", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("w")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	dir, err := unpackBytes(t, "tar.gz", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "m", "w.bin")); err != nil || string(b) != "w" {
		t.Fatalf("w.bin = %q, %v", b, err)
	}
}

// An archive that unpacks to more than the cache may hold is refused as too large, not half written.
func TestUnpackStopsAtTheBound(t *testing.T) {
	archive := tarGz(t, file{name: "a.bin", body: strings.Repeat("a", 600)}, file{name: "b.bin", body: strings.Repeat("b", 600)})
	tmp := t.TempDir()
	f := filepath.Join(tmp, "archive")
	if err := os.WriteFile(f, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unpack("tar.gz", f, dir, &budget{limit: 1000}); ReasonOf(err) != ReasonTooLarge {
		t.Fatalf("unpacking 1200 bytes within 1000: %v", err)
	}
}

// An archive of many empty files costs a block each: a bomb of inodes is refused like a bomb of bytes.
func TestUnpackChargesEachEntry(t *testing.T) {
	var files []file
	for i := range 50 {
		files = append(files, file{name: fmt.Sprintf("e%d", i)})
	}
	tmp := t.TempDir()
	f := filepath.Join(tmp, "archive")
	if err := os.WriteFile(f, tarGz(t, files...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "model")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unpack("tar.gz", f, dir, &budget{limit: 100 * 1024}); ReasonOf(err) != ReasonTooLarge {
		t.Fatalf("50 empty files within 100 KiB: %v", err)
	}
}
