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
	link := fs.String("link", "", "a symbolic link to create, pointing at the model's directory in the cache")
	resultFile := fs.String("result-file", "/dev/termination-log", "where the result goes, as JSON")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long the fetch may take")
	s3Endpoint := fs.String("s3-endpoint", "", "the S3-compatible store's host[:port]")
	s3Region := fs.String("s3-region", "", "the S3 region")
	s3Insecure := fs.Bool("s3-insecure", false, "speak plain HTTP to the S3 endpoint")
	s3Dir := fs.String("s3-secret-dir", "", "a mounted Secret saying how s3:// models are reached: files "+S3EndpointKey+", "+
		S3RegionKey+", "+S3InsecureKey+", "+S3AccessKeyKey+", "+S3SecretKeyKey+", "+S3SessionTokenKey+" (each optional; "+
		"the flags win over the files)")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := Fetch(ctx, *uri, Options{CacheDir: *cacheDir, MaxBytes: limit.Value(), S3: s3})
	if err == nil && *link != "" {
		err = relink(*link, res.Path)
		if err != nil {
			res.Reason, res.Message = ReasonOf(err), err.Error()
		}
	}
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

// relink points the link at target, replacing what was there (the pod's previous run made it).
func relink(link, target string) error {
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// report writes the result and returns the exit code.
func report(out io.Writer, resultFile string, res Result, err error) int {
	if len(res.Message) > maxMessage/2 {
		res.Message = res.Message[:maxMessage/2] + "…"
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		b = []byte(fmt.Sprintf(`{"reason":%q}`, ReasonFailed))
	}
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
