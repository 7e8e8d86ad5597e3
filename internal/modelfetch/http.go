package modelfetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// download is what a completed download produced.
type download struct {
	// digest of the content ("sha256:<hex>"); validators as the source gave them.
	digest     string
	validators map[string]string
}

// remote is a model's source.
type remote interface {
	// fetch downloads the model into dir unless the source still matches cached (nil when there is none to ask
	// about): unchanged then, and nothing written. A digest the URI pins is checked before anything is unpacked.
	fetch(ctx context.Context, cached *entry, dir string, sp space) (unchanged bool, d download, err error)
}

// httpRemote is a model served over HTTP(S): a file, or an archive that is unpacked.
type httpRemote struct {
	client *http.Client
	src    Source
}

func (h httpRemote) fetch(ctx context.Context, cached *entry, dir string, sp space) (bool, download, error) {
	resp, err := h.get(ctx, cached)
	if err != nil {
		return false, download{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if unchanged, err := h.answered(resp, cached != nil); unchanged || err != nil {
		return unchanged, download{}, err
	}
	if sp.limit > 0 && resp.ContentLength > sp.limit {
		return false, download{}, fmt.Errorf("%s: %w: %d bytes, the cache holds %d", h.src.URI, errTooLarge, resp.ContentLength, sp.limit)
	}
	dl := sp.download(h.src.name())
	if dl.room != nil && resp.ContentLength > 0 {
		// Told the size, the fetch claims it before the first byte: a model that cannot fit fails now.
		if err := dl.room.claim(resp.ContentLength, 0); err != nil {
			return false, download{}, fmt.Errorf("%s: %w", h.src.URI, err)
		}
	}
	want, wantHash, err := announcedDigest(resp.Header)
	if err != nil {
		return false, download{}, failed(ReasonFailed, err)
	}
	file := filepath.Join(filepath.Dir(dir), "download")
	sum, err := saveHashing(file, resp.Body, wantHash, dl.budget())
	if err != nil {
		return false, download{}, err
	}
	if want != nil && !bytes.Equal(want, wantHash.Sum(nil)) {
		return false, download{}, failed(ReasonChecksumMismatch, fmt.Errorf("%s: the content does not match the digest the server announced", h.src.URI))
	}
	digest := "sha256:" + hex.EncodeToString(sum)
	if err := checkPin(h.src, digest); err != nil {
		return false, download{}, err
	}
	if err := place(file, h.src.name(), dir, sp); err != nil {
		return false, download{}, err
	}
	return false, download{digest: digest, validators: validators(resp.Header)}, nil
}

// get sends the request for the model: a conditional one when it is cached, so that an unchanged model costs an
// answer, not a download.
func (h httpRemote) get(ctx context.Context, cached *entry) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.src.URI, nil)
	if err != nil {
		return nil, failed(ReasonInvalidURI, err)
	}
	if cached != nil {
		if v := cached.Validators["etag"]; v != "" {
			req.Header.Set("If-None-Match", v)
		}
		if v := cached.Validators["last-modified"]; v != "" {
			req.Header.Set("If-Modified-Since", v)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// The error names the URL it failed at: after a redirect, a presigned URL whose signature must show
		// nowhere (status, events, logs, the termination message). It names the model's own URI instead.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = h.src.URI
		}
		if errors.Is(err, errDowngrade) {
			return nil, failed(ReasonFailed, err)
		}
		return nil, err // ReasonOf tells a network down from a certificate refused
	}
	return resp, nil
}

// answered reads the response's status: the cached model unchanged (304 to a conditional request), the model to
// download (200), or why not, with the reason a status code means.
func (h httpRemote) answered(resp *http.Response, conditional bool) (unchanged bool, err error) {
	switch code := resp.StatusCode; {
	case code == http.StatusNotModified && conditional:
		return true, nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return false, failed(ReasonNotFound, fmt.Errorf("%s: %s", h.src.URI, resp.Status))
	case code == http.StatusProxyAuthRequired:
		return false, failed(ReasonProxy, fmt.Errorf("%s: %s: the proxy wants credentials", h.src.URI, resp.Status))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return false, failed(ReasonForbidden, fmt.Errorf("%s: %s", h.src.URI, resp.Status))
	case code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		// The source is down for now: as unreachable as a network that does not answer.
		return false, failed(ReasonUnreachable, fmt.Errorf("%s: %s", h.src.URI, resp.Status))
	case code != http.StatusOK:
		return false, failed(ReasonFailed, fmt.Errorf("%s: %s", h.src.URI, resp.Status))
	}
	return false, nil
}

// validators are what a later conditional request sends back: the response's ETag (a weak one, W/…, would do as
// well for If-None-Match; kept as the server sent it) and Last-Modified.
func validators(h http.Header) map[string]string {
	v := map[string]string{}
	if etag := h.Get("ETag"); etag != "" {
		v["etag"] = etag
	}
	if lm := h.Get("Last-Modified"); lm != "" {
		v["last-modified"] = lm
	}
	return v
}

// errDowngrade is a redirect from https to plain http, refused.
var errDowngrade = errors.New("a redirect from https to http was refused: the model would cross the network unprotected")

// maxRedirects is how many redirects a fetch follows, as Go's client does by default.
const maxRedirects = 10

// checkRedirect follows up to maxRedirects redirects, never from https to http. Its errors name no URL: the one
// redirected to may carry a presigned URL's signature.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errDowngrade
	}
	return nil
}

// checkPin refuses content whose digest is not the one the URI pins, before it is unpacked or installed.
func checkPin(src Source, digest string) error {
	if src.Digest != "" && digest != src.Digest {
		return failed(ReasonChecksumMismatch, fmt.Errorf("%s: content digest %s, but the URI pins %s", src.URI, digest, src.Digest))
	}
	return nil
}

// announcedDigest reads the SHA-256 digest a server announces for the content (Repr-Digest, RFC 9530, or the
// older Digest header), and a hash to check it with; none when it announces none.
func announcedDigest(h http.Header) ([]byte, hash.Hash, error) {
	for _, header := range []string{"Repr-Digest", "Digest"} {
		for _, part := range strings.Split(h.Get(header), ",") {
			alg, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || !strings.EqualFold(alg, "sha-256") {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(strings.Trim(val, ":"))
			if err != nil || len(b) != sha256.Size {
				return nil, nil, fmt.Errorf("the server's %s header is malformed: %q", header, part)
			}
			return b, sha256.New(), nil
		}
	}
	return nil, sha256.New(), nil
}

// saveHashing writes r into file, within the budget, durably, and returns its SHA-256; it also writes it into also
// (another hash to check, or io.Discard).
func saveHashing(file string, r io.Reader, also io.Writer, b *budget) ([]byte, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	if _, err := io.Copy(io.MultiWriter(b.writer(f), sum, also), r); err != nil {
		_ = f.Close()
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, failed(ReasonUnreachable, err)
		}
		return nil, err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return sum.Sum(nil), f.Close()
}

// place puts a downloaded file into the model directory: unpacked (within the space) when its name says it is an
// archive, else as it is, under its name.
func place(file, name, dir string, sp space) error {
	if kind := archiveKind(name); kind != "" {
		if err := unpack(kind, file, dir, sp.budget()); err != nil {
			return err
		}
		return os.Remove(file)
	}
	return os.Rename(file, filepath.Join(dir, name))
}
