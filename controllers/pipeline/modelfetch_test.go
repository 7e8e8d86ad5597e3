package pipeline_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// The fetches' configuration, read from the controller's environment.

// The fetches' configuration comes from the controller's environment, the chart's values; a directory that is not
// clean and absolute, or a size that is not a quantity above zero, is an error (the controller keeps it as the
// fetches' Problem, which fails the steps that fetch into the nodes' directory).
func TestModelFetchFromEnv(t *testing.T) {
	g := NewWithT(t)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	f, err := pipeline.ModelFetchFromEnv(env(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.CacheDir).To(Equal(pipeline.DefaultCacheDir))
	g.Expect(f.MaxSize.String()).To(Equal(pipeline.DefaultCacheMaxSize))
	f, err = pipeline.ModelFetchFromEnv(env(map[string]string{pipeline.EnvFetchImage: "img", pipeline.EnvCacheDir: "/mnt/models",
		pipeline.EnvCacheMaxSize: "200Gi"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f).To(Equal(pipeline.ModelFetch{Image: "img", CacheDir: "/mnt/models", MaxSize: resource.MustParse("200Gi"),
		HoldCPU: resource.MustParse(pipeline.DefaultHoldCPU), HoldMemory: resource.MustParse(pipeline.DefaultHoldMemory)}))
	f, err = pipeline.ModelFetchFromEnv(env(map[string]string{pipeline.EnvHoldCPU: "100m", pipeline.EnvHoldMemory: "128Mi"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.HoldCPU.String()).To(Equal("100m"))
	g.Expect(f.HoldMemory.String()).To(Equal("128Mi"))
	for _, bad := range []map[string]string{{pipeline.EnvCacheDir: "/"}, {pipeline.EnvCacheDir: "models"},
		{pipeline.EnvCacheDir: "/a/../etc"}, {pipeline.EnvCacheMaxSize: "0"}, {pipeline.EnvCacheMaxSize: "lots"},
		{pipeline.EnvHoldCPU: "0"}, {pipeline.EnvHoldMemory: "-64Mi"}, {pipeline.EnvHoldMemory: "a little"},
		{pipeline.EnvFetchHTTPSProxy: "proxy.corp:3128"}, {pipeline.EnvFetchHTTPProxy: "http://user:secret@proxy.corp:3128"},
		{pipeline.EnvFetchHTTPSProxy: "ftp://proxy.corp"}, {pipeline.EnvFetchHTTPSProxy: "http://"},
		{pipeline.EnvFetchCABundle: "not a certificate"}} {
		_, err := pipeline.ModelFetchFromEnv(env(bad))
		g.Expect(err).To(HaveOccurred(), "%v", bad)
	}
	// A proxy with credentials reaches no step, not even those the Problem spares.
	f, err = pipeline.ModelFetchFromEnv(env(map[string]string{pipeline.EnvFetchHTTPSProxy: "http://user:secret@proxy.corp:3128"}))
	g.Expect(err).To(MatchError(ContainSubstring("credentials")))
	g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
	g.Expect(f.Env).To(BeEmpty())
	// Every wrong value is told at once, and a wrong directory does not lose the rest.
	f, err = pipeline.ModelFetchFromEnv(env(map[string]string{pipeline.EnvCacheDir: "models", pipeline.EnvHoldCPU: "0",
		pipeline.EnvCacheMaxSize: "20Gi"}))
	g.Expect(err).To(MatchError(And(ContainSubstring(pipeline.EnvCacheDir), ContainSubstring(pipeline.EnvHoldCPU))))
	g.Expect(f.MaxSize.String()).To(Equal("20Gi"))
}
