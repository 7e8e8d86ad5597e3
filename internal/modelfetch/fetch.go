package modelfetch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Fetch makes the model at uri available in the cache and returns where, and how it got there. A failed fetch
// returns a Result whose Reason says why, and the error.
func Fetch(ctx context.Context, uri string, o Options) (Result, error) {
	start := time.Now()
	src, err := Parse(uri)
	if err != nil {
		return Result{URI: uri, Reason: ReasonInvalidURI, Message: err.Error()}, err
	}
	res, err := fetchLocked(ctx, src, o)
	if err != nil {
		res.Reason, res.Message = ReasonOf(err), err.Error()
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}

// fetchLocked fetches under the model's lock, and links it while the lock is held.
func fetchLocked(ctx context.Context, src Source, o Options) (Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	c := &cache{root: o.CacheDir, maxBytes: o.MaxBytes, keepFor: o.KeepFor, now: now}
	unlock, err := c.lockKey(ctx, src.key())
	if err != nil {
		return Result{URI: src.URI}, fmt.Errorf("locking the cache %s: %w", o.CacheDir, err)
	}
	defer unlock()
	res, err := fetch(ctx, c, src, o)
	if err == nil {
		err = makeInUse(filepath.Dir(res.Path))
	}
	if err == nil && o.LinksDir != "" {
		err = linkEntries(o.LinksDir, res.Path)
	}
	return res, err
}

func fetch(ctx context.Context, c *cache, src Source, o Options) (Result, error) {
	res := Result{URI: src.URI}
	endpoint := ""
	if src.Scheme == SchemeS3 {
		endpoint = o.S3.Endpoint
	}
	// A model pinned to its digest needs no question to its source once the cache holds it.
	if src.Digest != "" {
		if e, ok := c.read(c.entryDir(src, endpoint, src.Digest)); ok {
			return hit(c, e, res, "")
		}
	}
	var cached *entry
	if src.Digest == "" {
		cached, _ = c.newest(src, endpoint)
	}
	r, err := remoteFor(src, o)
	if err != nil {
		return res, err
	}
	// The claim goes after the staging (deferred first, it is released last): once installed the model is an entry,
	// counted as one; a failed fetch's staging is removed before its claim is.
	rm := newRoom(ctx, c, src.key())
	defer rm.release()
	if rm != nil {
		rm.keep = cached // the copy served should the source stop answering midway
	}
	staged, err := c.stage(src.key())
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(staged) }() // nothing left once installed: the rename moved it
	unchanged, d, err := r.fetch(ctx, cached, filepath.Join(staged, modelDir), space{limit: o.MaxBytes, room: rm})
	switch {
	case err != nil && cached != nil && ReasonOf(err) == ReasonUnreachable && c.exists(cached):
		// The source cannot be asked (a network down, an air-gapped node): the copy the cache holds serves.
		return hit(c, cached, res, fmt.Sprintf("the source could not be reached (%v): the cached copy is used", err))
	case err != nil:
		return res, err
	case unchanged:
		return hit(c, cached, res, "")
	}
	size, err := dirSize(filepath.Join(staged, modelDir))
	if err != nil {
		return res, err
	}
	t := c.now()
	e := &entry{URI: src.URI, Endpoint: endpoint, Digest: d.digest, Size: size, Validators: d.validators, Fetched: t, LastUsed: t}
	if err := writeEntryFile(staged, e); err != nil {
		return res, err
	}
	if e, err = c.install(staged, src, e); err != nil {
		return res, err
	}
	if _, err := c.evict(ctx, e, src.key()); err != nil {
		return res, fmt.Errorf("evicting old models: %w", err)
	}
	res.Digest, res.Size, res.Path = e.Digest, e.Size, e.modelPath()
	return res, nil
}

// hit is a result served from the cache.
func hit(c *cache, e *entry, res Result, message string) (Result, error) {
	if err := c.touch(e); err != nil {
		return res, err
	}
	res.Digest, res.Size, res.Path, res.CacheHit, res.Message = e.Digest, e.Size, e.modelPath(), true, message
	return res, nil
}

// remoteFor is the source of a model.
func remoteFor(src Source, o Options) (remote, error) {
	switch src.Scheme {
	case SchemeS3:
		return newS3Remote(o.S3, src, transport(o))
	default:
		client := &http.Client{Transport: transport(o), CheckRedirect: checkRedirect}
		if o.testClient != nil {
			client.Transport = o.testClient.Transport
		}
		return httpRemote{client: client, src: src}, nil
	}
}

// linkEntries fills dir with a link to each entry at the top of target, after removing the links a previous run
// of the pod left (a restarted pod keeps its emptyDir). Anything in dir that is not a link is left alone.
func linkEntries(dir, target string) error {
	old, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range old {
		if e.Type()&os.ModeSymlink != 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(target, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
