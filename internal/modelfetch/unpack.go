package modelfetch

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// entryPath checks an archive entry's name and returns it cleaned: relative, without ".." and not empty.
func entryPath(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	if n == "" || strings.HasPrefix(n, "/") || (len(n) > 1 && n[1] == ':') {
		return "", fmt.Errorf("%w: entry %q is an absolute path", errUnsafeArchive, name)
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%w: entry %q climbs out of the model's directory", errUnsafeArchive, name)
		}
	}
	clean := path.Clean(n)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// unpack extracts the archive at file (of the given kind) into dir, within the budget. Only directories and
// regular files are extracted, through an os.Root on dir, so no entry can be written outside it even if a check
// here missed one.
func unpack(kind, file, dir string, b *budget) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	switch kind {
	case "zip":
		return unpackZip(file, root, b)
	case "tar", "tar.gz":
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		var r io.Reader = f
		if kind == "tar.gz" {
			gz, err := gzip.NewReader(f)
			if err != nil {
				return fmt.Errorf("%w: %w", errCorruptArchive, err)
			}
			defer func() { _ = gz.Close() }()
			r = gz
		}
		return unpackTar(tar.NewReader(r), root, b)
	}
	return fmt.Errorf("unknown archive kind %q", kind)
}

func unpackTar(tr *tar.Reader, root *os.Root, b *budget) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errCorruptArchive, err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // a pax global header (git archive writes one): metadata, no file
		}
		name, err := entryPath(h.Name)
		if err != nil {
			return err
		}
		if err := b.entry(); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "" {
				if err := root.MkdirAll(name, 0o755); err != nil {
					return err
				}
			}
		case tar.TypeReg:
			if err := writeEntry(root, name, tr, h.FileInfo().Mode(), b); err != nil {
				return err
			}
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%w: entry %q is a link", errUnsafeArchive, h.Name)
		default:
			// Devices, FIFOs, extended headers' leftovers: nothing a model needs.
			return fmt.Errorf("%w: entry %q is neither a file nor a directory", errUnsafeArchive, h.Name)
		}
	}
}

func unpackZip(file string, root *os.Root, b *budget) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("%w: %w", errCorruptArchive, err)
	}
	defer func() { _ = zr.Close() }()
	for _, f := range zr.File {
		name, err := entryPath(f.Name)
		if err != nil {
			return err
		}
		if err := b.entry(); err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if name != "" {
				if err := root.MkdirAll(name, 0o755); err != nil {
					return err
				}
			}
		case mode.IsRegular():
			rc, err := f.Open()
			if err != nil {
				return fmt.Errorf("%w: %w", errCorruptArchive, err)
			}
			err = writeEntry(root, name, rc, mode, b)
			_ = rc.Close()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: entry %q is neither a file nor a directory", errUnsafeArchive, f.Name)
		}
	}
	return nil
}

// writeEntry writes one file of an archive within the budget, its parents made as needed; the file keeps its
// executable bits only.
func writeEntry(root *os.Root, name string, r io.Reader, mode fs.FileMode, b *budget) error {
	if name == "" {
		return fmt.Errorf("%w: a file entry without a name", errUnsafeArchive)
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644|(mode&0o111))
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: entry %q appears twice", errUnsafeArchive, name)
		}
		return err
	}
	if _, err := io.Copy(b.writer(f), r); err != nil {
		_ = f.Close()
		if errors.Is(err, errTooLarge) {
			return err
		}
		return fmt.Errorf("%w: %w", errCorruptArchive, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
