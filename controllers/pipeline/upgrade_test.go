//go:build integration

package pipeline_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/apply"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
	"github.com/keelson-dev/keelson/internal/testenv"
)

// startFetching runs the controller as a release whose fetcher is image, reaching sources through proxy.
func startFetching(t *testing.T, image, proxy string) (*testenv.Manager, *testenv.Counts) {
	return env.StartCountedManager(t, pipeline.CacheOptions(), func(o client.Object) bool {
		_, ok := o.(*inferencev1alpha1.Pipeline)
		return ok
	},
		func(mgr ctrl.Manager, c client.Client) error {
			return (&pipeline.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), ModelFetch: pipeline.ModelFetch{
				Image: image, CacheDir: "/data/models", MaxSize: resource.MustParse("10Gi"),
				Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: proxy}}}}).SetupWithManager(mgr)
		})
}

// fetcher is the image and proxy of the fetch and hold containers of step a's Deployment.
func fetcher(s *scenario) []string {
	d := s.deployment("cached-a")
	if d == nil {
		return nil
	}
	var out []string
	for _, c := range d.Spec.Template.Spec.InitContainers {
		proxy := ""
		for _, e := range c.Env {
			if e.Name == "HTTPS_PROXY" {
				proxy = e.Value
			}
		}
		out = append(out, c.Name+" "+c.Image+" "+proxy)
	}
	return out
}

// scaleKeepsTheFetcher scales step a of pipeline cached to 2 and checks that its Deployment keeps the v1 fetcher.
func scaleKeepsTheFetcher(s *scenario) {
	s.g.Eventually(func() error {
		p := s.get("cached")
		p.Spec.Steps[0].Replicas = ptr.To[int32](2)
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() int32 { return *s.deployment("cached-a").Spec.Replicas }, timeout, poll).Should(Equal(int32(2)))
	s.g.Expect(fetcher(s)[0]).To(Equal(pipeline.FetchContainer+" keelson/pipeline-controller:v1 http://proxy-1:3128"),
		"scaling the step took the new fetcher: its pods rolled")
}

// newServerImage changes the image of step a of pipeline cached: a change of the step's own pod template.
func newServerImage(s *scenario) {
	s.g.Eventually(func() error {
		p := s.get("cached")
		p.Spec.Steps[0].Image = "server:v2"
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
}

// The fetcher is the platform's, not the step's: a new controller image, proxy or CA bundle (a helm upgrade) leaves
// every step's Deployment as it is, so no step restarts; a step whose own spec changes rolls anyway, and takes the
// new fetcher then.
func TestAnUpgradeRestartsNoModelFetchingStep(t *testing.T) {
	s := newScenario(t)
	old, _ := startFetching(t, "keelson/pipeline-controller:v1", "http://proxy-1:3128")
	s.cachedPipeline("cached", "https://models.example/detect.tar.gz", nil)
	s.g.Eventually(func() []string { return fetcher(s) }, timeout, poll).Should(Equal([]string{
		pipeline.FetchContainer + " keelson/pipeline-controller:v1 http://proxy-1:3128",
		pipeline.HoldContainer + " keelson/pipeline-controller:v1 "}))
	generation := s.deployment("cached-a").Generation
	old.Stop()

	_, c := startFetching(t, "keelson/pipeline-controller:v2", "http://proxy-2:3128")
	s.g.Eventually(func() int64 { return c.Gets.Load() }, timeout, poll).ShouldNot(BeZero(), "the new controller ran no pass")
	quiet(s, c)
	s.g.Expect(s.deployment("cached-a").Generation).To(Equal(generation), "the upgrade rewrote the step's Deployment")
	s.g.Expect(fetcher(s)[0]).To(Equal(pipeline.FetchContainer + " keelson/pipeline-controller:v1 http://proxy-1:3128"))

	// A change outside the step's pod template (its replicas) keeps the fetcher: scaling restarts nothing.
	scaleKeepsTheFetcher(s)

	// The step's own change rolls it, with the new fetcher.
	newServerImage(s)
	s.g.Eventually(func() []string { return fetcher(s) }, timeout, poll).Should(Equal([]string{
		pipeline.FetchContainer + " keelson/pipeline-controller:v2 http://proxy-2:3128",
		pipeline.HoldContainer + " keelson/pipeline-controller:v2 "}))
}

// A step's Deployment written by a version that did not stamp its template's hash is not rewritten for the stamp
// alone: any write of a Deployment's annotations bumps its generation, which an upgrade must leave as it was. It is
// stamped with the step's next change.
func TestAnUpgradeDoesNotRewriteAStepForItsStamp(t *testing.T) {
	s := newScenario(t)
	old, _ := startFetching(t, "keelson/pipeline-controller:v1", "http://proxy-1:3128")
	s.cachedPipeline("cached", "https://models.example/detect.tar.gz", nil)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment("cached-a") }, timeout, poll).ShouldNot(BeNil())
	old.Stop()

	// Make the Deployment what a version without the stamp left: no stamp, and the hash of what it applied.
	p := s.get("cached")
	w, errs := pipelinespec.Wire(p.Spec.Steps)
	s.g.Expect(errs).To(BeEmpty())
	desired := pipeline.DesiredDeployment(p, 0, w, pipeline.ModelFetch{Image: "keelson/pipeline-controller:v1",
		CacheDir: "/data/models", MaxSize: resource.MustParse("10Gi"), Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy-1:3128"}}})
	delete(desired.Annotations, pipeline.StepTemplateAnnotation)
	hash, err := apply.Hash(desired)
	s.g.Expect(err).NotTo(HaveOccurred())
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:%q}}}`, pipeline.StepTemplateAnnotation, apply.HashAnnotation, hash)
	s.g.Expect(env.Client.Patch(s.ctx, s.deployment("cached-a"), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	generation := s.deployment("cached-a").Generation

	_, c := startFetching(t, "keelson/pipeline-controller:v2", "http://proxy-2:3128")
	s.g.Eventually(func() int64 { return c.Gets.Load() }, timeout, poll).ShouldNot(BeZero(), "the new controller ran no pass")
	quiet(s, c)
	d := s.deployment("cached-a")
	s.g.Expect(d.Generation).To(Equal(generation), "the upgrade rewrote the step's Deployment: annotations %v", d.Annotations)
	s.g.Expect(fetcher(s)[0]).To(Equal(pipeline.FetchContainer + " keelson/pipeline-controller:v1 http://proxy-1:3128"))

	// Scaling the step is no change of its pods: it keeps the fetcher.
	scaleKeepsTheFetcher(s)

	// The step's own change rolls it, with the new fetcher, and stamps it.
	newServerImage(s)
	s.g.Eventually(func() []string { return fetcher(s) }, timeout, poll).Should(ContainElement(
		pipeline.FetchContainer + " keelson/pipeline-controller:v2 http://proxy-2:3128"))
	s.g.Expect(s.deployment("cached-a").Annotations).To(HaveKey(pipeline.StepTemplateAnnotation))
}
