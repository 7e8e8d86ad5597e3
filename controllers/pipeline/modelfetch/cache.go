package modelfetch

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// entry is what the cache records of one model it holds (entry.json).
type entry struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Validators are what the source said of the content when it was fetched (HTTP ETag and Last-Modified, each
	// S3 object's ETag): asked again, an unchanged source says the same.
	Validators map[string]string `json:"validators,omitempty"`
	Fetched    time.Time         `json:"fetched"`
	LastUsed   time.Time         `json:"lastUsed"`

	// dir is the entry's directory (not stored).
	dir string
}

const (
	entryFile = "entry.json"
	modelDir  = "model"
	tmpDir    = ".tmp"
	lockFile  = ".lock"
)

// modelPath is the entry's model directory.
func (e *entry) modelPath() string { return filepath.Join(e.dir, modelDir) }

// cache is the node-local model cache under root.
type cache struct {
	root string
	// maxBytes bounds the models' total size; 0 is no bound.
	maxBytes int64
	now      func() time.Time
}

// lock takes the cache's lock, held while one fetch looks up, downloads and installs: two steps starting on one
// node with the same model download it once. It returns the unlock.
func (c *cache) lock() (func(), error) {
	if err := os.MkdirAll(filepath.Join(c.root, tmpDir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(c.root, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing the file releases the lock
}

// entryDir is where the entry of a source with a digest lives.
func (c *cache) entryDir(s Source, digest string) string {
	return filepath.Join(c.root, s.key(), strings.TrimPrefix(digest, "sha256:"))
}

// read reads one entry; a directory without a readable entry.json (a crash between rename and write cannot make
// one: entry.json is written before the rename) is no entry.
func (c *cache) read(dir string) (*entry, bool) {
	b, err := os.ReadFile(filepath.Join(dir, entryFile))
	if err != nil {
		return nil, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil {
		return nil, false
	}
	e.dir = dir
	return &e, true
}

// pinned returns the entry of a source pinned to a digest, if the cache holds it.
func (c *cache) pinned(s Source) (*entry, bool) { return c.read(c.entryDir(s, s.Digest)) }

// newest returns the most recently fetched entry of a source's URI, if any.
func (c *cache) newest(s Source) (*entry, bool) {
	dirs, err := os.ReadDir(filepath.Join(c.root, s.key()))
	if err != nil {
		return nil, false
	}
	var best *entry
	for _, d := range dirs {
		if e, ok := c.read(filepath.Join(c.root, s.key(), d.Name())); ok && e.URI == s.URI && (best == nil || e.Fetched.After(best.Fetched)) {
			best = e
		}
	}
	return best, best != nil
}

// touch records that an entry was used now.
func (c *cache) touch(e *entry) error {
	e.LastUsed = c.now()
	return writeEntryFile(e.dir, e)
}

// install moves a completed download (staged: its model directory beside a written entry.json) into place. If the
// same content is there already, the download is dropped and the existing entry used.
func (c *cache) install(staged string, e *entry, s Source) (*entry, error) {
	dest := c.entryDir(s, e.Digest)
	if existing, ok := c.read(dest); ok {
		_ = os.RemoveAll(staged)
		existing.Validators = e.Validators // what the source says now
		return existing, c.touch(existing)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dest) // a directory without entry.json: a leftover, never used
	if err := os.Rename(staged, dest); err != nil {
		return nil, err
	}
	e.dir = dest
	return e, nil
}

// stage makes a fresh directory for a download under the cache's own temporary directory (same filesystem, so
// the install is a rename). Leftovers of fetches that died are removed first.
func (c *cache) stage() (string, error) {
	tmp := filepath.Join(c.root, tmpDir)
	if old, err := os.ReadDir(tmp); err == nil {
		for _, d := range old {
			_ = os.RemoveAll(filepath.Join(tmp, d.Name())) // the lock is held: no other fetch is using it
		}
	}
	dir, err := os.MkdirTemp(tmp, "fetch-")
	if err != nil {
		return "", err
	}
	return dir, os.Mkdir(filepath.Join(dir, modelDir), 0o755)
}

// evict removes entries, least recently used first, until the models fit the bound; keep is never removed. It
// returns what it removed.
func (c *cache) evict(keep *entry) ([]string, error) {
	if c.maxBytes <= 0 {
		return nil, nil
	}
	var all []*entry
	var total int64
	uris, err := os.ReadDir(c.root)
	if err != nil {
		return nil, err
	}
	for _, u := range uris {
		if !u.IsDir() || strings.HasPrefix(u.Name(), ".") {
			continue
		}
		digests, err := os.ReadDir(filepath.Join(c.root, u.Name()))
		if err != nil {
			continue
		}
		for _, d := range digests {
			if e, ok := c.read(filepath.Join(c.root, u.Name(), d.Name())); ok {
				all = append(all, e)
				total += e.Size
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].LastUsed.Before(all[j].LastUsed) })
	var removed []string
	for _, e := range all {
		if total <= c.maxBytes {
			break
		}
		if e.dir == keep.dir {
			continue
		}
		if err := os.RemoveAll(e.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		total -= e.Size
		removed = append(removed, e.URI+" "+e.Digest)
	}
	return removed, nil
}

// writeEntryFile writes entry.json into dir, atomically.
func writeEntryFile(dir string, e *entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, entryFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, entryFile))
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
