package modelfetch

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Options are where the cache is and how sources are reached.
type Options struct {
	// CacheDir is the cache's root on the node; MaxBytes bounds the models it holds (0: no bound), and a model
	// larger than that is refused. KeepFor orders the eviction: entries unused for longer go
	// first; it never holds the cache above its bound.
	CacheDir string
	MaxBytes int64
	KeepFor  time.Duration
	// LinksDir, when set, is filled with links to the model's top entries before the model's lock is released, so
	// no eviction can come between the fetch and the links.
	LinksDir string
	// RootCAs are the certificate authorities that https sources and TLS S3 endpoints are checked against: the
	// system's roots when nil.
	RootCAs *x509.CertPool
	// Proxy chooses the proxy of a request: the environment's (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) when nil.
	Proxy func(*http.Request) (*url.URL, error)
	// S3 reaches s3 models.
	S3 S3Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// testClient, in tests, replaces the http(s) client's transport (a test server's own TLS client).
	testClient *http.Client
}

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
