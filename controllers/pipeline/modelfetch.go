package pipeline

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/keelson-dev/keelson/internal/modelfetch"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// How the fetches of the node-local model cache are configured: the controller's environment, which the chart sets.
const (
	// DefaultCacheDir and DefaultCacheMaxSize are the cache's directory on each node and one namespace's bound there,
	// when the controller is given none (the chart gives them).
	DefaultCacheDir     = "/var/lib/keelson/models"
	DefaultCacheMaxSize = "50Gi"
	// EnvFetchImage, EnvCacheDir and EnvCacheMaxSize configure the fetches (the chart sets them): the image (the
	// controller's own), the cache's directory on the nodes, and one namespace's bound.
	EnvFetchImage   = "KEELSON_MODEL_FETCH_IMAGE"
	EnvCacheDir     = "KEELSON_MODEL_CACHE_DIR"
	EnvCacheMaxSize = "KEELSON_MODEL_CACHE_MAX_SIZE"
	// EnvFetchHTTPProxy, EnvFetchHTTPSProxy and EnvFetchNoProxy are the proxy the fetches reach their sources
	// through (the chart sets them from pipelineController.modelCache.proxy): the fetch-model containers get them as
	// HTTP_PROXY, HTTPS_PROXY and NO_PROXY. The controller's own environment is not passed on: its proxy, if any, is
	// for the apiserver, which the fetches do not speak to.
	EnvFetchHTTPProxy  = "KEELSON_MODEL_FETCH_HTTP_PROXY"
	EnvFetchHTTPSProxy = "KEELSON_MODEL_FETCH_HTTPS_PROXY"
	EnvFetchNoProxy    = "KEELSON_MODEL_FETCH_NO_PROXY"
	// EnvFetchCABundle holds PEM certificates every fetch trusts beside the public roots (the chart sets it from
	// pipelineController.modelCache.caBundle): the CA of a TLS-inspecting proxy, or of the organization's model
	// stores. The fetch-model containers get it as modelfetch.EnvCABundle.
	EnvFetchCABundle = "KEELSON_MODEL_FETCH_CA_BUNDLE"
	// EnvHoldCPU and EnvHoldMemory size the hold-model sidecar (the chart sets them from
	// pipelineController.modelCache.hold), for namespaces whose LimitRange asks every container for more.
	EnvHoldCPU    = "KEELSON_MODEL_HOLD_CPU"
	EnvHoldMemory = "KEELSON_MODEL_HOLD_MEMORY"
	// DefaultHoldCPU and DefaultHoldMemory are the hold's size when the controller is given none: a process that
	// sleeps holding a lock.
	DefaultHoldCPU    = "10m"
	DefaultHoldMemory = "64Mi"
)

// ModelFetch is how the controller runs the fetches of storage cache. The cluster's operators choose where the
// cache is on the nodes and how much it holds; a pipeline chooses neither, so no tenant mounts a directory of the
// node it picks, and each namespace's steps see only their namespace's cache.
type ModelFetch struct {
	// Image runs pipeline-controller fetch-model: the controller's own.
	Image string
	// CacheDir is the cache's directory on each node; a namespace's cache is <CacheDir>/namespaces/<namespace>
	// (below a directory of its own, so that no namespace's name can be a directory an operator's CacheDir holds).
	CacheDir string
	// MaxSize bounds one namespace's cache on a node.
	MaxSize resource.Quantity
	// Env is the fetches' environment: the proxy they reach their sources through (HTTP_PROXY, HTTPS_PROXY and
	// NO_PROXY) and the operators' CA bundle (modelfetch.EnvCABundle), each only when set.
	Env []corev1.EnvVar
	// HoldCPU and HoldMemory are the hold's cpu and memory, its requests and limits both (DefaultHoldCPU and
	// DefaultHoldMemory when zero).
	HoldCPU, HoldMemory resource.Quantity
	// Problem, when set, says why the controller cannot run fetches into the nodes' directory (its configuration is
	// wrong): the steps that would fail with it, the others run.
	Problem string
}

// Fetcher is what f puts into a step's fetch and hold containers: the fetcher webhook gives it to every new step pod.
// A configuration the controller refused (a proxy with credentials, a CA bundle without a certificate) gives none:
// new pods keep the fetcher their step's Deployment was written with, which worked.
func (f ModelFetch) Fetcher() pipelinespec.Fetcher {
	if f.Problem != "" {
		return pipelinespec.Fetcher{}
	}
	return pipelinespec.Fetcher{Image: f.Image, Env: f.Env}
}

// problem says why the controller cannot run fetches, or "". A cache on local volumes needs only the image: the
// nodes' directory and its bound are not its own.
func (f ModelFetch) problem(localVolume bool) string {
	switch {
	case f.Problem != "" && !localVolume:
		return "the pipeline controller cannot fetch models: " + f.Problem
	case f.Image == "":
		return "the pipeline controller has no image to fetch models with: its " + EnvFetchImage + " is unset (the chart sets it)"
	}
	return ""
}

// cacheOf is a namespace's cache on the nodes.
func (f ModelFetch) cacheOf(namespace string) string {
	return path.Join(f.CacheDir, "namespaces", namespace)
}

// ModelFetchFromEnv reads the fetches' configuration from the controller's environment (EnvFetchImage,
// EnvCacheDir, EnvCacheMaxSize, the proxy's, the hold's size), with the defaults for what is unset. Wrong values
// are an error, which the controller keeps as the configuration's Problem: it fails the steps that fetch into the
// nodes' directory, not the controller.
func ModelFetchFromEnv(getenv func(string) string) (ModelFetch, error) {
	f := ModelFetch{Image: getenv(EnvFetchImage), CacheDir: getenv(EnvCacheDir)}
	var errs []error
	for _, v := range []struct {
		from, to string
		url      bool
	}{
		{EnvFetchHTTPProxy, "HTTP_PROXY", true}, {EnvFetchHTTPSProxy, "HTTPS_PROXY", true}, {EnvFetchNoProxy, "NO_PROXY", false},
	} {
		value := getenv(v.from)
		if value == "" {
			continue
		}
		if v.url {
			if err := checkProxyURL(value); err != nil {
				// Not passed on either: the steps that still fetch (on local volumes) would show its credentials.
				errs = append(errs, fmt.Errorf("%s: %w", v.from, err))
				continue
			}
		}
		f.Env = append(f.Env, corev1.EnvVar{Name: v.to, Value: value})
	}
	if pem := getenv(EnvFetchCABundle); pem != "" {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(pem)) {
			errs = append(errs, fmt.Errorf("%s holds no PEM certificate", EnvFetchCABundle))
		}
		f.Env = append(f.Env, corev1.EnvVar{Name: modelfetch.EnvCABundle, Value: pem})
	}
	if f.CacheDir == "" {
		f.CacheDir = DefaultCacheDir
	}
	if !path.IsAbs(f.CacheDir) || path.Clean(f.CacheDir) != f.CacheDir || f.CacheDir == "/" {
		errs = append(errs, fmt.Errorf("%s %q: must be a clean absolute directory other than /", EnvCacheDir, f.CacheDir))
	}
	// quantity reads a size above zero from the environment, or its default.
	quantity := func(name, def, example string) resource.Quantity {
		v := getenv(name)
		if v == "" {
			v = def
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s %q: must be a quantity above zero, such as %s", name, v, example))
			return resource.MustParse(def)
		}
		return q
	}
	f.MaxSize = quantity(EnvCacheMaxSize, DefaultCacheMaxSize, "50Gi")
	f.HoldCPU = quantity(EnvHoldCPU, DefaultHoldCPU, "10m")
	f.HoldMemory = quantity(EnvHoldMemory, DefaultHoldMemory, "64Mi")
	return f, errors.Join(errs...)
}

// checkProxyURL checks a proxy's URL as Go's HTTP client reads it: http, https or socks5, a host, and no
// credentials (the URL is in every fetching step's pod spec, which the namespace's users read).
func checkProxyURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("is not a URL") // the parser's message quotes it, credentials included
	case u.User != nil:
		return errors.New("carries credentials, which every fetching step's pod spec would show to its namespace's users")
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5" && u.Scheme != "socks5h":
		return fmt.Errorf("%q: the scheme must be http, https, socks5 or socks5h", raw)
	case u.Host == "":
		return fmt.Errorf("%q names no host", raw)
	}
	return nil
}
