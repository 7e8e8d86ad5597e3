package modelfetch

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Command is the name of the pipeline-controller's subcommand that fetches a model: pipeline-controller
// fetch-model --uri … --cache-dir … .
const Command = "fetch-model"

// The keys of the Secret that says how s3:// models are reached; mounted, each is a file.
const (
	S3EndpointKey     = "endpoint"
	S3RegionKey       = "region"
	S3InsecureKey     = "insecure"
	S3AccessKeyKey    = "accessKeyID"
	S3SecretKeyKey    = "secretAccessKey"
	S3SessionTokenKey = "sessionToken"
)

// maxMessage bounds what is written to the termination message: the kubelet keeps 4096 bytes of it.
const maxMessage = 4096

// Main runs the fetch-model command with its arguments and returns its exit code. It writes the Result as JSON
// into --result-file (the container's termination message, where the controller reads it) and to out.
func Main(args []string, out io.Writer) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(out)
	uri := fs.String("uri", "", "the model's URI: http(s)://…, s3://bucket/prefix, optionally #sha256=<hex>")
	cacheDir := fs.String("cache-dir", "", "the node-local cache's root")
	maxSize := fs.String("cache-max-size", "0", "the models the cache may hold before it evicts the least recently used (a quantity, 0: no bound)")
	links := fs.String("links-dir", "", "a directory to fill with a link to each file and directory at the top of the model "+
		"(the step's MODEL_PATH): the model appears there as it would on a share")
	keepFor := fs.Duration("keep-for", 24*time.Hour, "models unused for longer are evicted first (it never holds the cache above its bound)")
	resultFile := fs.String("result-file", "/dev/termination-log", "where the result goes, as JSON")
	timeout := fs.Duration("timeout", 2*time.Hour, "how long the fetch may take, waiting for another fetch of the model included")
	s3Endpoint := fs.String("s3-endpoint", "", "the S3-compatible store's host[:port]")
	s3Region := fs.String("s3-region", "", "the S3 region")
	s3Insecure := fs.Bool("s3-insecure", false, "speak plain HTTP to the S3 endpoint")
	s3Dir := fs.String("s3-secret-dir", "", "a mounted Secret saying how s3:// models are reached: files "+S3EndpointKey+", "+
		S3RegionKey+", "+S3InsecureKey+", "+S3AccessKeyKey+", "+S3SecretKeyKey+", "+S3SessionTokenKey+" (each optional; "+
		"the flags win over the files)")
	caFile := fs.String("ca-file", "", "PEM certificates of a private certificate authority to trust beside the system's roots, "+
		"for https sources and TLS S3 endpoints")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *uri == "" || *cacheDir == "" {
		_, _ = fmt.Fprintln(out, "fetch-model: --uri and --cache-dir are required")
		return 2
	}
	limit, err := resource.ParseQuantity(*maxSize)
	if err != nil {
		_, _ = fmt.Fprintf(out, "fetch-model: --cache-max-size: %v\n", err)
		return 2
	}
	s3, err := s3Config(*s3Endpoint, *s3Region, *s3Insecure, *s3Dir)
	if err != nil {
		return report(out, *resultFile, Result{URI: *uri, Reason: ReasonForbidden, Message: err.Error()}, err)
	}
	o := Options{CacheDir: *cacheDir, MaxBytes: limit.Value(), KeepFor: *keepFor, LinksDir: *links, S3: s3}
	if o.RootCAs, err = RootCAsWith(os.Getenv(EnvCABundle), *caFile); err != nil {
		return report(out, *resultFile, Result{URI: *uri, Reason: ReasonTLS, Message: err.Error()}, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := Fetch(ctx, *uri, o)
	return report(out, *resultFile, res, err)
}

// s3Config reads the S3 settings: the flags, else the mounted Secret's files. Keys are both given or neither
// (anonymous access).
func s3Config(endpoint, region string, insecure bool, dir string) (S3Config, error) {
	c := S3Config{Endpoint: endpoint, Region: region, Insecure: insecure}
	if dir == "" {
		return c, nil
	}
	read := func(key string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, key))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("the S3 Secret's %s: %w", key, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	values := map[string]string{}
	for _, key := range []string{S3EndpointKey, S3RegionKey, S3InsecureKey, S3AccessKeyKey, S3SecretKeyKey, S3SessionTokenKey} {
		v, err := read(key)
		if err != nil {
			return c, err
		}
		values[key] = v
	}
	if c.Endpoint == "" {
		c.Endpoint = values[S3EndpointKey]
	}
	if c.Region == "" {
		c.Region = values[S3RegionKey]
	}
	c.Insecure = c.Insecure || values[S3InsecureKey] == "true"
	c.AccessKey, c.SecretKey, c.SessionToken = values[S3AccessKeyKey], values[S3SecretKeyKey], values[S3SessionTokenKey]
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return c, fmt.Errorf("the S3 Secret has one of %s and %s without the other", S3AccessKeyKey, S3SecretKeyKey)
	}
	return c, nil
}

// report writes the result and returns the exit code.
func report(out io.Writer, resultFile string, res Result, err error) int {
	b := fitResult(res)
	_, _ = fmt.Fprintln(out, string(b))
	if resultFile != "" {
		if werr := os.WriteFile(resultFile, b, 0o644); werr != nil {
			_, _ = fmt.Fprintf(out, "fetch-model: writing %s: %v\n", resultFile, werr)
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// fitResult is the result as JSON in at most maxMessage bytes (the kubelet keeps the last 4096 bytes of a
// termination message: a longer one would lose its start, and the controller could not read it). The message is
// cut first, then the URI.
func fitResult(res Result) []byte {
	for {
		b, err := json.Marshal(res)
		switch {
		case err != nil:
			return []byte(fmt.Sprintf(`{"reason":%q}`, ReasonFailed))
		case len(b) <= maxMessage:
			return b
		case res.Message != "":
			res.Message = cut(res.Message)
		default:
			res.URI = cut(res.URI)
		}
	}
}

// cut is s with its second half replaced by "…", between characters.
func cut(s string) string {
	r := []rune(s)
	if len(r) <= 2 {
		return "" // "…" would make it no shorter
	}
	return string(r[:len(r)/2]) + "…"
}
