package modelfetch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// claimStep is how much more space a fetch claims each time it outgrows its claim: a claim takes the eviction lock
// and reads every entry, so it is made per 64 MiB written, not per write.
const claimStep = 64 << 20

// room is a fetch's share of the cache's bound. The models, and every fetch's download and unpacking under way,
// must fit the bound together: a fetch claims space before it writes it (its claim file), evicting models nobody
// uses to make room, and fails when even that leaves too little. Without claims each concurrent fetch would be
// given the whole bound, and staging would not be counted at all.
type room struct {
	ctx context.Context
	c   *cache
	key string
	// keep is the entry the fetch falls back to should its source stop answering midway: not evicted for it.
	keep    *entry
	written int64 // bytes this fetch has written
	claimed int64 // bytes its claim holds
}

// newRoom is the room of the fetch of key (nil when the cache has no bound).
func newRoom(ctx context.Context, c *cache, key string) *room {
	if c.maxBytes <= 0 {
		return nil
	}
	return &room{ctx: ctx, c: c, key: key}
}

// grow records n more bytes written, claiming more space first when they would pass the claim.
func (r *room) grow(n int64) error {
	if r == nil {
		return nil
	}
	r.written += n
	if r.written <= r.claimed {
		return nil
	}
	return r.claim(r.written, claimStep)
}

// claim makes this fetch's claim at least total bytes (step more when the bound allows it: a download of unknown
// size claims as it goes, a size told in advance is claimed exactly, leaving the rest to other fetches), evicting
// models nobody uses to make room. It fails, naming the sizes, when the models in use and the other fetches' claims
// leave less than total.
func (r *room) claim(total, step int64) error {
	unlock, err := lockFile(r.ctx, filepath.Join(r.c.root, evictLock))
	if err != nil {
		return err
	}
	defer unlock()
	r.c.reclaimStaging(r.key)
	others := r.c.otherClaims(r.key)
	if total > r.c.maxBytes {
		return fmt.Errorf("%w: it needs more than %d bytes, and the cache holds at most %d", errTooLarge, total, r.c.maxBytes)
	}
	// What eviction could free first, evicting nothing: a model that cannot fit even then must not empty the cache
	// for nothing. Evicted then are only what total needs: models nobody uses, this key's older versions among them
	// (this fetch holds the key's lock, and replaces them), but for the one it falls back to.
	// The copy the fetch falls back to is kept while the bound allows it, and goes when only its place fits the new
	// model (the fetch then has no copy to fall back to).
	target := r.c.maxBytes - others - total
	keep := r.keep
	_, floor, err := r.c.evictLocked(keep, r.key, target, true)
	if err == nil && floor > target && keep != nil {
		keep = nil
		_, floor, err = r.c.evictLocked(keep, r.key, target, true)
	}
	if err != nil {
		return err
	}
	if floor > target {
		return r.full(total, floor, others)
	}
	_, models, err := r.c.evictLocked(keep, r.key, target, false)
	if err != nil {
		return err
	}
	if models > target { // freed meanwhile by nobody: an entry taken into use between the two passes
		return r.full(total, models, others)
	}
	// A step more when it fits as things are, so the next claim is that far away.
	want := max(total, min(r.claimed+step, r.c.maxBytes-others-models))
	if err := os.WriteFile(r.c.claimFile(r.key), []byte(strconv.FormatInt(want, 10)), 0o644); err != nil {
		return err
	}
	r.claimed = want
	return nil
}

// full is the error of a claim of total bytes that does not fit beside models bytes of models nobody may evict and
// others bytes of other fetches' claims.
func (r *room) full(total, models, others int64) error {
	return fmt.Errorf("%w: it needs more than %d bytes, and of the cache's %d bytes %d are models in use and %d "+
		"are claimed by other fetches under way", errCacheFull, total, r.c.maxBytes, models, others)
}

// release drops the claim: the fetch is over (its model is an entry now, counted as one, or it failed and its
// staging is gone).
func (r *room) release() {
	if r != nil && r.claimed > 0 {
		_ = os.Remove(r.c.claimFile(r.key))
	}
}

// reclaimStaging removes what fetches of other keys left in the temporary directory when they died (killed
// midway, their node restarted): downloads, half-unpacked models, evicted entries not yet removed. A fetch that
// runs holds its key's lock; what no running fetch holds is no one's.
func (c *cache) reclaimStaging(self string) {
	dirs, err := os.ReadDir(filepath.Join(c.root, tmpDir))
	if err != nil {
		return
	}
	for _, d := range dirs {
		key, _, found := strings.Cut(d.Name(), "-")
		if !d.IsDir() || !found || key == self || c.fetching(key) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(c.root, tmpDir, d.Name()))
	}
}
