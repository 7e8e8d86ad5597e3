package modelfetch

import (
	"context"
	"crypto/md5" //nolint:gosec // S3's ETag of a single-part object is its MD5: checked, not trusted for security
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
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

func newS3Remote(cfg S3Config, src Source) (*s3Remote, error) {
	if cfg.Endpoint == "" {
		return nil, failed(ReasonInvalidURI, fmt.Errorf("%s: no S3 endpoint given", src.URI))
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: creds, Secure: !cfg.Insecure, Region: cfg.Region})
	if err != nil {
		return nil, failed(ReasonInvalidURI, err)
	}
	return &s3Remote{client: c, src: src}, nil
}

// object is one object of the model, with the name it gets in the model's directory.
type object struct {
	key, name, etag string
}

func (s *s3Remote) fetch(ctx context.Context, cached *entry, dir string) (bool, download, error) {
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
	if single {
		o := objects[0]
		file := filepath.Join(filepath.Dir(dir), "download")
		sum, err := s.get(ctx, o, file)
		if err != nil {
			return false, download{}, err
		}
		if err := place(file, o.name, dir); err != nil {
			return false, download{}, err
		}
		return false, download{digest: "sha256:" + hex.EncodeToString(sum), validators: validators}, nil
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
		sum, err := s.get(ctx, o, filepath.Join(dir, filepath.FromSlash(o.name)))
		if err != nil {
			return false, download{}, err
		}
		lines = append(lines, o.name+"\x00"+hex.EncodeToString(sum)+"\n")
	}
	sort.Strings(lines)
	all := sha256.Sum256([]byte(strings.Join(lines, "")))
	return false, download{digest: "sha256:" + hex.EncodeToString(all[:]), validators: validators}, nil
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
			if strings.HasSuffix(rel, "/") {
				continue // a "directory" placeholder object
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

// get downloads one object into file and returns its SHA-256. The object's MD5 is checked against its ETag when
// the ETag is one (a single-part upload's).
func (s *s3Remote) get(ctx context.Context, o object, file string) ([]byte, error) {
	r, err := s.client.GetObject(ctx, s.src.Host, o.key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s3Failure(s.src, err)
	}
	defer func() { _ = r.Close() }()
	sum := md5.New() //nolint:gosec // see the import
	sha, err := saveHashing(file, r, sum)
	if err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code != "" {
			return nil, s3Failure(s.src, err)
		}
		return nil, err
	}
	etag := strings.Trim(o.etag, `"`)
	if b, err := hex.DecodeString(etag); err == nil && len(b) == md5.Size && hex.EncodeToString(sum.Sum(nil)) != strings.ToLower(etag) {
		return nil, failed(ReasonChecksumMismatch, fmt.Errorf("s3://%s/%s: the content does not match its ETag", s.src.Host, o.key))
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
	}
	return fmt.Errorf("%s: %w", src.URI, err) // a network failure shows as one (ReasonOf)
}
