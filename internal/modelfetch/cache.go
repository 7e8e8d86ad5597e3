package modelfetch

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// entry is what the cache records of one model it holds (entry.json).
type entry struct {
	URI string `json:"uri"`
	// Endpoint is the S3 store the content was read from ("" for http).
	Endpoint string `json:"endpoint,omitempty"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
	// Validators are what the source said of the content when it was fetched (HTTP ETag and Last-Modified, each
	// S3 object's ETag): asked again, an unchanged source says the same.
	Validators map[string]string `json:"validators,omitempty"`
	// Fetched is when the source last gave this content (fetched, or found unchanged after a fetch of other
	// content); LastUsed when a fetch last used it.
	Fetched  time.Time `json:"fetched"`
	LastUsed time.Time `json:"lastUsed"`

	// dir is the entry's directory (not stored).
	dir string
}

const (
	entryFile = "entry.json"
	modelDir  = "model"
	tmpDir    = ".tmp"
	// evictLock is held while entries are evicted; each key's own lock (<key>.lock) while a fetch of it runs.
	evictLock = ".evict.lock"
)

// modelPath is the entry's model directory.
func (e *entry) modelPath() string { return filepath.Join(e.dir, modelDir) }

// cache is the node-local model cache under root.
type cache struct {
	root string
	// maxBytes bounds the models' total size, with the fetches under way; 0 is no bound. keepFor orders the
	// eviction: entries unused for longer go first (it never holds the cache above its bound).
	maxBytes int64
	keepFor  time.Duration
	now      func() time.Time
}

// lockKey takes the lock of one URI's entries, held while one fetch of it looks up, downloads and installs: two
// steps starting together on one node with the same model download it once; fetches of other models go on.
func (c *cache) lockKey(ctx context.Context, key string) (func(), error) {
	if err := os.MkdirAll(filepath.Join(c.root, tmpDir), 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(c.root, key+".lock"))
	if err == nil {
		_ = os.Remove(c.claimFile(key)) // a claim of this key's fetch that died: no fetch of it runs but this one
	}
	return unlock, err
}

// entryDir is where the entry of a source read from endpoint, with a digest, lives.
func (c *cache) entryDir(src Source, endpoint, digest string) string {
	return filepath.Join(c.root, src.key(), src.entryName(endpoint, digest))
}

// read reads one entry; a directory without a readable entry.json (a leftover: entry.json is written before the
// install's rename) is no entry.
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

// newest returns the entry of the source, as read from endpoint, whose content the source gave last, if any.
func (c *cache) newest(src Source, endpoint string) (*entry, bool) {
	key := src.key()
	dirs, err := os.ReadDir(filepath.Join(c.root, key))
	if err != nil {
		return nil, false
	}
	var best *entry
	for _, d := range dirs {
		e, ok := c.read(filepath.Join(c.root, key, d.Name()))
		if ok && e.URI == src.URI && e.Endpoint == endpoint && (best == nil || e.Fetched.After(best.Fetched)) {
			best = e
		}
	}
	return best, best != nil
}

// exists reports whether the entry is still in the cache (a fetch short of room may have evicted it).
func (c *cache) exists(e *entry) bool {
	_, ok := c.read(e.dir)
	return ok
}

// touch records that an entry was used now.
func (c *cache) touch(e *entry) error {
	e.LastUsed = c.now()
	return writeEntryFile(e.dir, e)
}

// install moves a completed download (staged: its model directory beside a written entry.json) into place. If the
// same content is there already (an earlier version back at the source), the download is dropped and the
// existing entry becomes the newest.
func (c *cache) install(staged string, src Source, e *entry) (*entry, error) {
	dest := c.entryDir(src, e.Endpoint, e.Digest)
	if existing, ok := c.read(dest); ok {
		_ = os.RemoveAll(staged)
		existing.Validators, existing.Fetched = e.Validators, e.Fetched
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
	return e, syncDir(filepath.Dir(dest))
}

// stage makes a fresh directory for a download of key under the cache's own temporary directory (same filesystem,
// so the install is a rename). The key's lock is held: leftovers of its fetches that died are removed first, and
// no other fetch's are touched.
func (c *cache) stage(key string) (string, error) {
	tmp := filepath.Join(c.root, tmpDir)
	if old, err := filepath.Glob(filepath.Join(tmp, key+"-*")); err == nil {
		for _, d := range old {
			_ = os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp(tmp, key+"-")
	if err != nil {
		return "", err
	}
	// MkdirTemp makes it 0700, and it becomes the entry: the step's server may run as any user.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.Mkdir(filepath.Join(dir, modelDir), 0o755)
}

// evict removes entries until the models and the space other fetches have claimed (room) fit the bound. It never
// removes keep, an entry a running pod uses (its hold), or an entry of a key another fetch holds. It returns what it
// removed.
func (c *cache) evict(ctx context.Context, keep *entry, keepKey string) ([]string, error) {
	if c.maxBytes <= 0 {
		return nil, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(c.root, evictLock))
	if err != nil {
		return nil, err
	}
	defer unlock()
	removed, _, err := c.evictLocked(keep, keepKey, c.maxBytes-c.otherClaims(keepKey), false)
	return removed, err
}

// entries lists every entry of the cache, and their total size.
func (c *cache) entries() ([]*entry, int64, error) {
	var all []*entry
	var total int64
	keys, err := os.ReadDir(c.root)
	if err != nil {
		return nil, 0, err
	}
	for _, k := range keys {
		if !k.IsDir() || strings.HasPrefix(k.Name(), ".") {
			continue
		}
		digests, err := os.ReadDir(filepath.Join(c.root, k.Name()))
		if err != nil {
			continue
		}
		for _, d := range digests {
			if e, ok := c.read(filepath.Join(c.root, k.Name(), d.Name())); ok {
				all = append(all, e)
				total += e.Size
			}
		}
	}
	return all, total, nil
}

// holdGrace is how long after its last fetch an entry is never evicted: a step's pod takes the entry's hold (its
// in-use lock) only after its fetch has ended, seconds later, and an eviction in between would leave its links
// pointing nowhere.
const holdGrace = time.Minute

// evictLocked removes entries until the models total at most target, with the eviction lock held: first the
// entries unused for longer than keepFor, least recently used first, then, if that is not enough, the ones used
// within it (keepFor orders the eviction; it never holds the cache above its bound: a model a running pod uses is
// protected by its hold, not by keepFor). It never removes keep (nil for none), an entry in use or fetched within
// holdGrace, or an entry of a key another fetch holds. It returns what it removed and the models' total after; with
// dryRun it removes nothing and returns the total it would reach.
func (c *cache) evictLocked(keep *entry, keepKey string, target int64, dryRun bool) ([]string, int64, error) {
	all, total, err := c.entries()
	if err != nil {
		return nil, 0, err
	}
	now := c.now()
	stale := func(e *entry) bool { return now.Sub(e.LastUsed) >= c.keepFor }
	sort.SliceStable(all, func(i, j int) bool {
		if stale(all[i]) != stale(all[j]) {
			return stale(all[i])
		}
		return all[i].LastUsed.Before(all[j].LastUsed)
	})
	var removed []string
	for _, e := range all {
		if total <= target {
			break
		}
		if (keep != nil && e.dir == keep.dir) || now.Sub(e.LastUsed) < min(c.keepFor, holdGrace) {
			continue
		}
		key := filepath.Base(filepath.Dir(e.dir))
		// An entry a running pod uses (its hold, shared) stays: its server reads it through links, again at every
		// restart.
		unlockUse, ok, err := tryLockFile(e.dir + inUseSuffix)
		if err != nil || !ok {
			continue
		}
		release := unlockUse
		if key != keepKey {
			unlockKey, ok, err := tryLockFile(filepath.Join(c.root, key+".lock"))
			if err != nil || !ok {
				release()
				continue // a fetch of that model runs now
			}
			release = func() { unlockKey(); unlockUse() }
			// Read again under its lock: a fetch may have used it since the listing.
			if again, ok := c.read(e.dir); !ok || (!stale(e) && stale(again)) || again.LastUsed.After(e.LastUsed) {
				release()
				continue
			}
		}
		if dryRun {
			release()
			total -= e.Size
			continue
		}
		err = c.discard(e.dir, key)
		release()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, total, err
		}
		total -= e.Size
		removed = append(removed, e.URI+" "+e.Digest)
	}
	return removed, total, nil
}

// makeInUse makes an entry's in-use lock file (<entry>.inuse, beside it: it outlives the entry's removal, so a
// hold never locks a file that an eviction replaced), readable by any user, for the pod's hold to take read-only.
func makeInUse(entryDir string) error {
	f, err := os.OpenFile(entryDir+inUseSuffix, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// discard removes an entry of key: renamed into the cache's temporary directory first, so that an eviction cut
// short leaves no half-removed entry that a fetch would take for a whole one (the next fetch of the key removes
// the rest).
func (c *cache) discard(dir, key string) error {
	gone, err := os.MkdirTemp(filepath.Join(c.root, tmpDir), key+"-evicted-")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(gone, "entry")); err != nil {
		_ = os.Remove(gone)
		return err
	}
	return os.RemoveAll(gone)
}

// writeEntryFile writes entry.json into dir, atomically and durably: a power loss leaves the old file or the new.
func writeEntryFile(dir string, e *entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, entryFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, entryFile))
}

// syncDir makes a directory's entries (a rename into it) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
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

// inUseSuffix names an entry's in-use lock, <entry>.inuse beside it: each pod using the entry holds it shared, and
// an eviction of the entry needs it exclusively.
const inUseSuffix = ".inuse"

// claimSuffix ends a fetch's claim file in the cache's temporary directory: <key>.claim holds the bytes the fetch of
// key has claimed, valid while that key's lock is held (a claim whose fetch died is stale, and dropped).
const claimSuffix = ".claim"

// claimFile is where the fetch of key keeps its claim.
func (c *cache) claimFile(key string) string { return filepath.Join(c.root, tmpDir, key+claimSuffix) }

// otherClaims sums the claims of the fetches of other keys that run now (their key's lock is held); a claim whose
// fetch died is removed.
func (c *cache) otherClaims(self string) int64 {
	files, _ := filepath.Glob(filepath.Join(c.root, tmpDir, "*"+claimSuffix))
	var sum int64
	for _, f := range files {
		key := strings.TrimSuffix(filepath.Base(f), claimSuffix)
		if key == self {
			continue
		}
		if !c.fetching(key) {
			_ = os.Remove(f)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			sum += n
		}
	}
	return sum
}

// fetching reports whether a fetch of key runs now: its lock is held.
func (c *cache) fetching(key string) bool {
	unlock, ok, err := tryLockFile(filepath.Join(c.root, key+".lock"))
	if err != nil {
		return true // cannot tell: count it
	}
	if ok {
		unlock()
	}
	return !ok
}
