package modelfetch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Schemes a model URI may have.
const (
	SchemeHTTP  = "http"
	SchemeHTTPS = "https"
	SchemeS3    = "s3"
)

// Source is a parsed model URI.
type Source struct {
	// URI is the URI without its digest fragment: what the cache keys entries of the same model by.
	URI    string
	Scheme string
	// Host is the HTTP host, or the S3 bucket.
	Host string
	// Path is the HTTP path, or the S3 key prefix (no leading "/").
	Path string
	// Digest is the pinned content digest ("sha256:<hex>"), or "" when the URI pins none.
	Digest string
}

// Parse reads a model URI: http(s)://host/path or s3://bucket/prefix, optionally pinned to its content with a
// fragment #sha256=<64 hex digits>. Its errors say what is wrong in words a user can act on.
func Parse(raw string) (Source, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Source{}, fmt.Errorf("not a URI: %w", err)
	}
	s := Source{Scheme: u.Scheme, Host: u.Host}
	switch u.Scheme {
	case SchemeHTTP, SchemeHTTPS:
		if u.Host == "" {
			return Source{}, fmt.Errorf("%s URI without a host", u.Scheme)
		}
		if u.User != nil {
			return Source{}, fmt.Errorf("credentials in the URI would show in the pod spec: serve the model without them")
		}
		for name := range u.Query() {
			if slices.Contains(signatureParams, strings.ToLower(name)) {
				return Source{}, fmt.Errorf("query parameter %q carries credentials (a presigned URL): they would show in the "+
					"pod spec and status, and expire; use s3:// with a Secret, or serve the model without them", name)
			}
		}
		s.Path = u.EscapedPath()
		if s.Path == "" || strings.HasSuffix(s.Path, "/") {
			return Source{}, fmt.Errorf("%s URI must name a file or archive, not a directory", u.Scheme)
		}
	case SchemeS3:
		if u.Host == "" {
			return Source{}, fmt.Errorf("s3 URI without a bucket: s3://bucket/prefix")
		}
		if u.RawQuery != "" || u.User != nil {
			return Source{}, fmt.Errorf("s3 URI takes no query or credentials: name a Secret for the endpoint and keys")
		}
		s.Path = strings.TrimPrefix(u.Path, "/")
	case "":
		return Source{}, fmt.Errorf("no scheme: use http://, https:// or s3://")
	default:
		return Source{}, fmt.Errorf("unsupported scheme %q: use http, https or s3", u.Scheme)
	}
	if u.Fragment != "" {
		hexDigest, ok := strings.CutPrefix(u.Fragment, "sha256=")
		if b, err := hex.DecodeString(hexDigest); !ok || err != nil || len(b) != sha256.Size {
			return Source{}, fmt.Errorf("fragment %q: the only fragment is #sha256=<64 hex digits>, the model's digest", u.Fragment)
		}
		s.Digest = "sha256:" + strings.ToLower(hexDigest)
	}
	u.Fragment, u.RawFragment = "", ""
	s.URI = u.String()
	return s, nil
}

// KeyOf is the cache directory of a model URI's entries, below a namespace's cache: a hash of the URI without its
// digest fragment. The controller mounts just that directory into a step's server.
func KeyOf(uri string) (string, error) {
	s, err := Parse(uri)
	if err != nil {
		return "", err
	}
	return s.key(), nil
}

// key is the cache directory of the source's entries.
func (s Source) key() string {
	sum := sha256.Sum256([]byte(s.URI))
	return hex.EncodeToString(sum[:16])
}

// entryName is the directory of one entry below the key: the content's digest, and for s3 the endpoint it was read
// from (the same s3:// URI names other content in another store).
func (s Source) entryName(endpoint, digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if s.Scheme != SchemeS3 {
		return d
	}
	sum := sha256.Sum256([]byte(endpoint))
	return hex.EncodeToString(sum[:4]) + "-" + d
}

// signatureParams are query parameters that carry a presigned URL's credentials: they would show in the pod
// spec, the status and the cache, and expire.
var signatureParams = []string{"x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
	"x-goog-credential", "signature", "sig", "token", "access_token", "private_token", "api_key", "apikey", "api-key",
	"x-api-key", "password", "secret", "client_secret"}

// name is the file a single downloaded file is stored as: the last segment of its path, unescaped unless that
// would make it a path of its own ("%2F", "..").
func (s Source) name() string {
	n := path.Base(s.Path)
	if un, err := url.PathUnescape(n); err == nil && !strings.ContainsAny(un, "/\\") && un != ".." && un != "." {
		n = un
	}
	if n == "." || n == "/" || n == "" || n == ".." {
		return "model"
	}
	return n
}
