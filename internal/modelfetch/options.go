package modelfetch

import (
	"crypto/x509"
	"net/http"
	"net/url"
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
