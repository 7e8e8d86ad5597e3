package modelfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
)

// Reasons a fetch fails with, as the step's status shows them.
const (
	ReasonNotFound         = "NotFound"
	ReasonForbidden        = "Forbidden"
	ReasonChecksumMismatch = "ChecksumMismatch"
	ReasonDiskFull         = "DiskFull"
	ReasonUnreachable      = "Unreachable"
	ReasonUnsafeArchive    = "UnsafeArchive"
	ReasonCorruptArchive   = "CorruptArchive"
	ReasonInvalidURI       = "InvalidURI"
	ReasonTooLarge         = "TooLarge"
	// ReasonCacheFull is a model that fits the cache's bound, but not beside the models in use and the fetches
	// under way now: it may fit later.
	ReasonCacheFull   = "CacheFull"
	ReasonTLS         = "TLSFailed"
	ReasonProxy       = "ProxyFailed"
	ReasonLockTimeout = "LockTimeout"
	ReasonFailed      = "FetchFailed"
)

// Result is what a fetch did: where the model came from, what it is, and whether the cache had it. The fetch-model
// command writes it as JSON into its termination message, where the controller reads it for the step's status.
type Result struct {
	// URI is the model's URI, without its digest fragment.
	URI string `json:"uri"`
	// Digest is the content's digest ("sha256:<hex>"): of the file or archive downloaded, or, for an S3 prefix,
	// of the sorted list of its objects' names and digests.
	Digest string `json:"digest,omitempty"`
	// Size is the model's size on the node, in bytes.
	Size int64 `json:"size,omitempty"`
	// CacheHit: nothing was downloaded.
	CacheHit bool `json:"cacheHit"`
	// Path is the model's directory in the cache.
	Path string `json:"path,omitempty"`
	// Seconds is how long the fetch took, in this process: for a cache hit, the lookup and the question to the
	// source.
	Seconds float64 `json:"seconds"`
	// Reason and Message say why a fetch failed.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// fetchError is a failure with the reason the step's status shows.
type fetchError struct {
	reason string
	err    error
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// failed wraps err with a reason.
func failed(reason string, err error) error { return &fetchError{reason: reason, err: err} }

// ReasonOf is the reason a fetch failed with: the one given where the failure was met, else what the error shows
// (a full disk, a network that does not answer, an unsafe or corrupt archive).
func ReasonOf(err error) string {
	var fe *fetchError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ReasonDiskFull // before any other: a full disk also breaks a download or an unpacking midway
	case errors.As(err, &fe):
		return fe.reason
	case errors.Is(err, errCacheFull):
		return ReasonCacheFull
	case errors.Is(err, errTooLarge):
		return ReasonTooLarge
	case errors.Is(err, errUnsafeArchive):
		return ReasonUnsafeArchive
	case errors.Is(err, errCorruptArchive):
		return ReasonCorruptArchive
	case proxyFailure(err):
		// Before the network errors too: a proxy that refuses the fetch (its credentials, its policy) is a
		// configuration to fix, which the cached copy must not hide either.
		return ReasonProxy
	case tlsFailure(err):
		// Before the network errors: a certificate no root vouches for is a configuration to fix, not a source
		// down, and the cached copy must not paper over it.
		return ReasonTLS
	case unreachable(err):
		return ReasonUnreachable
	}
	return ReasonFailed
}

// unreachable reports whether err is a source that could not be reached: a connection refused, reset or timed
// out, a name that does not resolve. An answer that came but was wrong (not HTTP, a redirect refused) is not: the
// cached copy must not hide it. Go's client wraps every failure in a *url.Error, itself a net.Error whatever it
// wraps, so only what it wraps tells.
func unreachable(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err != nil && unreachable(ue.Err)
	}
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.As(err, &op) || errors.As(err, &dns) || (errors.As(err, &ne) && ne.Timeout())
}

// proxyFailure reports whether err is a proxy that refused to connect the fetch to its source: a CONNECT answered
// 407 (the proxy wants credentials) or 403 (its policy forbids the host). Go's client reports such an answer as an
// error of the status's text alone. A proxy that cannot be reached, or cannot reach the source (502, 503, 504), is
// a network failure like any other.
func proxyFailure(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Err == nil {
		return false
	}
	text := ue.Err.Error()
	return text == http.StatusText(http.StatusProxyAuthRequired) || text == http.StatusText(http.StatusForbidden)
}

// tlsFailure reports whether err is a TLS handshake that failed: an unknown authority, an invalid or mismatched
// certificate, a server that does not speak TLS.
func tlsFailure(err error) bool {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var record tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &record) ||
		errors.As(err, &verify)
}

// errTooLarge is a model larger than the cache may hold: it is refused before it fills the node's disk.
var errTooLarge = errors.New("the model is larger than the cache may hold")

// errCacheFull is a model that fits the bound, but not beside the models in use and the fetches under way now.
var errCacheFull = errors.New("the cache has no room for the model now")

// errUnsafeArchive is an archive entry that would land outside the model's directory, or a link (a link could
// point anywhere on the node): such an archive is refused whole.
var errUnsafeArchive = errors.New("unsafe archive")

// errCorruptArchive is an archive that cannot be read.
var errCorruptArchive = errors.New("corrupt archive")
