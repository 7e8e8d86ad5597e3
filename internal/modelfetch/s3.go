package modelfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config is how an S3-compatible store is reached: from the Secret a pipeline names.
type S3Config struct {
	// Endpoint is host[:port]; Insecure speaks plain HTTP to it.
	Endpoint string
	Insecure bool
	Region   string
	// AccessKey, SecretKey and SessionToken authenticate; all empty is anonymous access.
	AccessKey, SecretKey, SessionToken string
}

// s3Remote is a model in an S3-compatible store: one object (unpacked when an archive), or every object under a
// prefix, laid out as their names below it.
type s3Remote struct {
	client *minio.Client
	src    Source
}

// newS3Remote reaches the store of cfg through t, over HTTP/1.1 as minio-go's own transport does.
func newS3Remote(cfg S3Config, src Source, t *http.Transport) (*s3Remote, error) {
	if cfg.Endpoint == "" {
		return nil, failed(ReasonInvalidURI, fmt.Errorf("%s: no S3 endpoint given", src.URI))
	}
	// An endpoint written as a URL says itself whether it speaks TLS.
	endpoint, secure := cfg.Endpoint, !cfg.Insecure
	if rest, ok := strings.CutPrefix(endpoint, "https://"); ok {
		endpoint, secure = rest, true
	} else if rest, ok := strings.CutPrefix(endpoint, "http://"); ok {
		endpoint, secure = rest, false
	}
	endpoint = strings.TrimSuffix(endpoint, "/")
	var creds *credentials.Credentials
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1" // else the client asks the bucket's location first, which many policies forbid
	}
	t.ForceAttemptHTTP2 = false
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: region, Transport: t})
	if err != nil {
		return nil, failed(ReasonInvalidURI, err)
	}
	return &s3Remote{client: c, src: src}, nil
}

// object is one object of the model, with the name it gets in the model's directory.
type object struct {
	key, name, etag string
}

func (s *s3Remote) fetch(ctx context.Context, cached *entry, dir string, sp space) (bool, download, error) {
	objects, single, err := s.list(ctx)
	if err != nil {
		return false, download{}, err
	}
	validators := map[string]string{}
	for _, o := range objects {
		validators[o.key] = o.etag
	}
	if cached != nil && maps.Equal(cached.Validators, validators) {
		return true, download{}, nil
	}
	b := sp.budget()
	if single {
		o := objects[0]
		b = sp.download(o.name).budget()
		file := filepath.Join(filepath.Dir(dir), "download")
		sum, err := s.get(ctx, o, file, b)
		if err != nil {
			return false, download{}, err
		}
		digest := "sha256:" + hex.EncodeToString(sum)
		if err := checkPin(s.src, digest); err != nil {
			return false, download{}, err
		}
		if err := place(file, o.name, dir, sp); err != nil {
			return false, download{}, err
		}
		return false, download{digest: digest, validators: validators}, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false, download{}, err
	}
	defer func() { _ = root.Close() }()
	lines := make([]string, 0, len(objects))
	for _, o := range objects {
		if d := path.Dir(o.name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return false, download{}, err
			}
		}
		sum, err := s.get(ctx, o, filepath.Join(dir, filepath.FromSlash(o.name)), b)
		if err != nil {
			return false, download{}, err
		}
		lines = append(lines, o.name+"\x00"+hex.EncodeToString(sum)+"\n")
	}
	all := prefixDigest(lines)
	if err := checkPin(s.src, all); err != nil {
		return false, download{}, err
	}
	return false, download{digest: all, validators: validators}, nil
}

// prefixDigest is the digest of a model of several objects: the SHA-256 of its objects' lines, "<name>\x00<sha256
// hex>\n", sorted. The same files give the same digest, however they are stored.
func prefixDigest(lines []string) string {
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// list finds the model's objects: the object named by the prefix itself (single), else every object below it as a
// directory. Names that would climb out of the model's directory refuse the model.
func (s *s3Remote) list(ctx context.Context) ([]object, bool, error) {
	prefix := s.src.Path
	dirPrefix := prefix
	if dirPrefix != "" && !strings.HasSuffix(dirPrefix, "/") {
		dirPrefix += "/"
	}
	var objects []object
	var exact *object
	for info := range s.client.ListObjects(ctx, s.src.Host, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, false, s3Failure(s.src, info.Err)
		}
		switch {
		case info.Key == prefix && prefix != "" && !strings.HasSuffix(prefix, "/"):
			exact = &object{key: info.Key, name: path.Base(info.Key), etag: info.ETag}
		case strings.HasPrefix(info.Key, dirPrefix):
			rel := strings.TrimPrefix(info.Key, dirPrefix)
			if rel == "" || strings.HasSuffix(rel, "/") {
				continue // a "folder" marker object (the consoles and s3fs make them): no file
			}
			name, err := entryPath(rel)
			if err != nil || name == "" {
				return nil, false, fmt.Errorf("%w: object %q", errUnsafeArchive, info.Key)
			}
			objects = append(objects, object{key: info.Key, name: name, etag: info.ETag})
		}
		// Anything else merely shares the prefix's first letters (models/a beside models/ab): not the model's.
	}
	switch {
	case exact != nil && len(objects) == 0:
		return []object{*exact}, true, nil
	case len(objects) > 0:
		return objects, false, nil
	}
	return nil, false, failed(ReasonNotFound, fmt.Errorf("%s: no object there", s.src.URI))
}

// get downloads one object into file, within the budget, and returns its SHA-256. It asks for the object as listed
// (its ETag): one overwritten meanwhile is a failed fetch, retried, never a mix of two versions. The ETag is not
// checked as an MD5: objects encrypted with KMS or a customer's key, and multipart uploads, have ETags that are not.
func (s *s3Remote) get(ctx context.Context, o object, file string, b *budget) ([]byte, error) {
	opts := minio.GetObjectOptions{}
	if o.etag != "" {
		if err := opts.SetMatchETag(strings.Trim(o.etag, `"`)); err != nil {
			return nil, err
		}
	}
	r, err := s.client.GetObject(ctx, s.src.Host, o.key, opts)
	if err != nil {
		return nil, s3Failure(s.src, err)
	}
	defer func() { _ = r.Close() }()
	sha, err := saveHashing(file, r, io.Discard, b)
	if err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code != "" {
			return nil, s3Failure(s.src, err)
		}
		return nil, err
	}
	return sha, nil
}

// s3Failure gives an S3 error its reason.
func s3Failure(src Source, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchBucket", "NoSuchKey":
		return failed(ReasonNotFound, fmt.Errorf("%s: %w", src.URI, err))
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken":
		return failed(ReasonForbidden, fmt.Errorf("%s: %w", src.URI, err))
	case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout":
		return failed(ReasonUnreachable, fmt.Errorf("%s: %w", src.URI, err))
	}
	return fmt.Errorf("%s: %w", src.URI, err) // a network failure shows as one (ReasonOf)
}
