//go:build integration

package pipeline_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
	"github.com/keelson-dev/keelson/internal/testenv"
	webhook "github.com/keelson-dev/keelson/webhooks/pipeline"
)

var withWebhook, withoutWebhook *testenv.Env

var pair *testenv.WebhookPair

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWebhookTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{inferencev1alpha1.AddToScheme}},
		"charts/keelson/files/webhooks/pipeline-controller.yaml", func(p *testenv.WebhookPair) {
			pair, withWebhook, withoutWebhook = p, p.With, p.Without
		}))
}

// todaysFetcher is the fetcher the webhooks under test serve.
var todaysFetcher = pipelinespec.Fetcher{Image: "registry.example/pipeline-controller:today",
	Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"}}}

func serveWebhooks(t *testing.T) {
	pair.Serve(t, func(mgr ctrl.Manager) error { return webhook.SetupWithManager(mgr, todaysFetcher) })
}

func namespace(t *testing.T, env *testenv.Env) string { return env.Namespace(t, "wh") }

// invalidPipelines are Pipelines each wrong in one way, with what the apiserver says of them with the webhook and
// without it (the CRD's own rules): the field path, and the message where it tells more.
var invalidPipelines = map[string]struct {
	mutate                      func(*inferencev1alpha1.Pipeline)
	withWebhook, withoutWebhook string
}{
	"no steps": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps = nil }, "spec.steps", "spec.steps"},
	"step without image": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Image = "" },
		"spec.steps[1].image", "spec.steps[1].image"},
	"step name not DNS-1123": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Name = "Step_A" },
		"spec.steps[0].name", "spec.steps[0].name"},
	"unnamed step": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Name = "" },
		"spec.steps[1].name: Required value", "spec.steps[1].name: Required value"},
	"readinessProbe with two handlers": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: []string{"true"}}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	}, "spec.steps[0].readinessProbe: Forbidden", ""},
	"readinessProbe port out of range": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(70000)}}}
	}, "spec.steps[1].readinessProbe.httpGet.port", ""},
	"readinessProbe with a grace period": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, TerminationGracePeriodSeconds: ptr.To[int64](5)}
	}, "spec.steps[0].readinessProbe.terminationGracePeriodSeconds", ""},
	"duplicate step names": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Name = "a" },
		"spec.steps[1].name: Duplicate value", ""},
	"next step that does not exist": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Next = []string{"ghost"} },
		"spec.steps[0].next[0]: Not found: \"ghost\"", ""},
	"cycle": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Next = []string{"a"} },
		"a -> b -> a", ""},
	"nfs without share": {func(p *inferencev1alpha1.Pipeline) { delete(p.Spec.ModelStorage.CSIParameter, "share") },
		"spec.modelStorage.csiParameter", "spec.modelStorage.csiParameter"},
	"pvc without claim": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC}
	}, "spec.modelStorage.claimName", "spec.modelStorage.claimName"},
	"unknown storage type": {func(p *inferencev1alpha1.Pipeline) { p.Spec.ModelStorage.Type = "s3" },
		"spec.modelStorage.type", "spec.modelStorage.type"},
	"listenPort not a port": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Args = map[string]string{"listenPort": "http"} },
		"spec.steps[0].args[listenPort]", ""},
	"unknown strategy": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Strategy = "BlueGreen" },
		"spec.steps[0].strategy", "spec.steps[0].strategy"},
	"absolute model path": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Model = "/etc/secrets" },
		"spec.steps[1].model", ""},
	"model path escaping the storage": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Model = "face/../../other" },
		"spec.steps[0].model", ""},
	"GPU request without a limit": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}, "spec.steps[0].resources.limits[nvidia.com/gpu]", ""},
	"MIG request above its limit": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("2")},
			Limits:   corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("1")}}
	}, "spec.steps[0].resources.requests[nvidia.com/mig-1g.5gb]", ""},
	"cpu request above its limit": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	}, "spec.steps[1].resources.requests[cpu]", ""},
	"location not a label value": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Location = "gpu-a/rack 1" },
		"spec.steps[0].location", "spec.steps[0].location"},
	"location too long for a label value": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Location = strings.Repeat("n", 64) },
		"spec.steps[1].location", "spec.steps[1].location"},
	"env var the controller sets": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Env = []corev1.EnvVar{{Name: "LOG", Value: "1"}, {Name: "MODEL_PATH", Value: "/elsewhere"}}
	}, "spec.steps[0].env[1].name", ""},
	"next step URL set by hand": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].Env = []corev1.EnvVar{{Name: "NEXT_STEP_URL", Value: "http://x"}}
	}, "spec.steps[1].env[0].name", ""},
	"env var named twice": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].Env = []corev1.EnvVar{{Name: "LOG", Value: "1"}, {Name: "X", Value: "2"}, {Name: "LOG", Value: "3"}}
	}, "spec.steps[1].env[2].name: Duplicate value", ""},
	"readiness path without a leading slash": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].Readiness = &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "ready"}}
	}, "spec.steps[1].readiness.httpGet.path", "spec.steps[1].readiness.httpGet.path"},
	"readiness path with a space": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Readiness = &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/health ready"}}
	}, "spec.steps[0].readiness.httpGet.path", "spec.steps[0].readiness.httpGet.path"},
	"readiness with both httpGet and protocol": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Readiness = &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/ready"},
			Protocol: inferencev1alpha1.ReadinessOpenInference}
	}, "spec.steps[0].readiness", "spec.steps[0].readiness"},
	"readiness with neither choice": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Readiness = &inferencev1alpha1.Readiness{} },
		"spec.steps[1].readiness", "spec.steps[1].readiness"},
	"readiness of an unknown protocol": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Readiness = &inferencev1alpha1.Readiness{Protocol: "grpc-health"}
	}, "spec.steps[0].readiness.protocol", "spec.steps[0].readiness.protocol"},
	"readiness port out of range": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[0].Readiness = &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/ready", Port: 70000}}
	}, "spec.steps[0].readiness.httpGet.port", "spec.steps[0].readiness.httpGet.port"},
	"readiness and readinessProbe together": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.Steps[1].Readiness = &inferencev1alpha1.Readiness{Protocol: inferencev1alpha1.ReadinessOpenInference}
		p.Spec.Steps[1].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	}, "spec.steps[1].readiness", "spec.steps[1].readiness"},
	"cache that keeps a share": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.CSIParameter = map[string]string{"server": "nfs", "share": "/m"}
	}, "spec.modelStorage.csiParameter", ""},
	"claim model escaping its claim": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Model = "pvc://models/face/../../x" },
		"spec.steps[0].model", ""},
	"claim model naming no claim": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Model = "pvc:///face" },
		"spec.steps[1].model", ""},
	"claim model naming an invalid claim": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Model = "pvc://Models_1/face" },
		"spec.steps[1].model", ""},
	"claim model pinned to a digest": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[0].Model = "pvc://models/face#sha256=" + strings.Repeat("0f", 32)
	}, "spec.steps[0].model", ""},
	"s3 model on an nfs share without the store's Secret": {func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Model = "s3://models/face" },
		"spec.steps[0].model", ""},
	"local cache volume without a class": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{}}
	}, "spec.modelStorage.cache.localVolume.storageClassName", "spec.modelStorage.cache.localVolume.storageClassName"},
	"local cache volume of no size": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{
			StorageClassName: "local", Size: ptr.To(resource.MustParse("0"))}}
	}, "spec.modelStorage.cache.localVolume.size", "spec.modelStorage.cache.localVolume.size"},
	"local cache volume of a class that is no name": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{StorageClassName: "Local Disks"}}
	}, "spec.modelStorage.cache.localVolume.storageClassName", "spec.modelStorage.cache.localVolume.storageClassName"},
	"cache with a claim": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.ClaimName = "models"
	}, "spec.modelStorage.claimName", ""},
	"s3 Secret name not a DNS subdomain": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{S3SecretName: "Store_1"}
	}, "spec.modelStorage.cache.s3SecretName", "spec.modelStorage.cache.s3SecretName"},
	"CA bundle without its ConfigMap's name": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Key: "ca.crt"}}
	}, "spec.modelStorage.cache.caBundle.name", "spec.modelStorage.cache.caBundle.name"},
	"CA bundle ConfigMap name not a DNS subdomain": {func(p *inferencev1alpha1.Pipeline) {
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Name: "Trust_Bundle"}}
	}, "spec.modelStorage.cache.caBundle.name", "spec.modelStorage.cache.caBundle.name"},
	"CA bundle key with a slash": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Name: "trust", Key: "certs/ca.crt"}}
	}, "spec.modelStorage.cache.caBundle.key", "spec.modelStorage.cache.caBundle.key"},
	"CA bundle key ..": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Name: "trust", Key: ".."}}
	}, "spec.modelStorage.cache.caBundle.key", "spec.modelStorage.cache.caBundle.key"},
	"CA bundle key ..data": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Name: "trust", Key: "..data"}}
	}, "spec.modelStorage.cache.caBundle.key", "spec.modelStorage.cache.caBundle.key"},
	"cached model with a presigned URL": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[0].Model = "https://bucket.s3.amazonaws.com/m.onnx?X-Amz-Signature=abc"
	}, "spec.steps[0].model", ""},
	"cached model given as a path": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[1].Model = "models/face"
	}, "spec.steps[1].model", ""},
	"cached model given as the whole share": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[1].Model = "models"
	}, "there is no share", ""},
	"cached model missing": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[0].Model = ""
	}, "spec.steps[0].model: Required", ""},
	"cached model of an unsupported scheme": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[0].Model = "file:///etc/shadow"
	}, "spec.steps[0].model", ""},
	"cached model with a malformed digest": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[0].Model = "https://models.example/m.onnx#sha256=abc"
	}, "spec.steps[0].model", ""},
	"s3 model without the store's Secret": {func(p *inferencev1alpha1.Pipeline) {
		cached(p)
		p.Spec.Steps[1].Model = "s3://models/face"
	}, "spec.steps[1].model", ""},
	"name with a leading digit": {func(p *inferencev1alpha1.Pipeline) { p.Name = "9lives" },
		"metadata.name", "DNS-1035"},
	"name with dots": {func(p *inferencev1alpha1.Pipeline) { p.Name = "face.detection" },
		"metadata.name", "DNS-1035"},
}

// Every invalid spec is rejected with its field path, with the webhook and (where CEL can express it) without.
func TestInvalidSpecsAreRejectedWithFieldPaths(t *testing.T) {
	serveWebhooks(t)
	cases := map[string]testenv.AdmissionCase{}
	for name, tc := range invalidPipelines {
		cases[name] = testenv.AdmissionCase{Mutate: func(o client.Object) { tc.mutate(o.(*inferencev1alpha1.Pipeline)) },
			WithWebhook: tc.withWebhook, WithoutWebhook: tc.withoutWebhook}
	}
	pair.CheckAdmissions(t, func(name string) client.Object { return valid(name) }, cases)
}

// One pipeline may take its models from several places: a path on its share, a claim of the namespace, an http(s)
// or s3 URI fetched into the cache. Storage cache takes URIs alone, claims included.
func TestModelFormsMix(t *testing.T) {
	serveWebhooks(t)
	for _, env := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		p := valid("mixed")
		p.Namespace = namespace(t, env)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{S3SecretName: "store"}
		p.Spec.Steps = []inferencev1alpha1.Step{
			{Name: "share", Image: "x", Model: "face/v1"},
			{Name: "claim", Image: "x", Model: "pvc://shared-models/detect/v2"},
			{Name: "http", Image: "x", Model: "https://models.example/detect.tar.gz"},
			{Name: "s3", Image: "x", Model: "s3://models/recognize/"},
		}
		g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
		c := valid("claims-only")
		c.Namespace = p.Namespace
		cached(c)
		c.Spec.Steps[1].Model = "pvc://shared-models"
		g.Expect(env.Client.Create(context.Background(), c)).To(Succeed())
	}
}

// The cache settings change with any storage type (the cache is filled anew); the rest of the storage does not,
// with any type.
func TestModelStorageCacheIsMutable(t *testing.T) {
	serveWebhooks(t)
	for _, env := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		p := valid("recached")
		p.Namespace = namespace(t, env)
		g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{S3SecretName: "store",
			LocalVolume: &inferencev1alpha1.LocalCacheVolume{StorageClassName: "local"},
			CABundle:    &inferencev1alpha1.ConfigMapKey{Name: "trust-bundle"}}
		g.Expect(env.Client.Update(context.Background(), p)).To(Succeed())
		p.Spec.ModelStorage.Cache = nil
		g.Expect(env.Client.Update(context.Background(), p)).To(Succeed())

		c := valid("cached-driver")
		c.Namespace = p.Namespace
		cached(c)
		g.Expect(env.Client.Create(context.Background(), c)).To(Succeed())
		c.Spec.ModelStorage.Driver = "other.csi.example"
		err := env.Client.Update(context.Background(), c)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("create a new pipeline"))
	}
}

// With the cache on local volumes, a step without a location has no node to keep a claim on: a warning says its
// pods fetch at every start.
func TestUnpinnedStepsOfALocalCacheAreWarnedOf(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	p := valid("local-cache")
	p.Namespace = namespace(t, withWebhook)
	cached(p)
	p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{StorageClassName: "local"}}
	p.Spec.Steps[1].Location = "gpu-a"
	c, recorded := withWebhook.ClientWithWarnings(t)
	g.Expect(c.Create(context.Background(), p)).To(Succeed())
	g.Expect(recorded.All()).To(ContainElement(And(ContainSubstring("spec.steps[0].location"), ContainSubstring("fetches the model when it starts"))))
	g.Expect(recorded.All()).NotTo(ContainElement(ContainSubstring("spec.steps[1].location: unset")))
	g.Expect(p.Spec.ModelStorage.Cache.LocalVolume.Size.String()).To(Equal("50Gi"), "the size is defaulted")
}

// The cache's local volumes must bind where their step runs: a StorageClass that binds Immediate is refused, naming
// the field, whether on creation or when the class changes; a class that binds WaitForFirstConsumer is admitted, and
// one that does not exist yet is admitted with a warning.
func TestLocalVolumeClassMustBindWhereTheStepRuns(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ctx := context.Background()
	for name, mode := range map[string]storagev1.VolumeBindingMode{
		"e2e-immediate": storagev1.VolumeBindingImmediate, "e2e-local": storagev1.VolumeBindingWaitForFirstConsumer} {
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/local",
			VolumeBindingMode: ptr.To(mode)}
		g.Expect(withWebhook.Client.Create(ctx, class)).To(Succeed())
		t.Cleanup(func() { _ = withWebhook.Client.Delete(context.Background(), class) })
	}
	ns := namespace(t, withWebhook)
	withClass := func(name, class string) *inferencev1alpha1.Pipeline {
		p := valid(name)
		p.Namespace = ns
		cached(p)
		p.Spec.ModelStorage.Cache = &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{StorageClassName: class}}
		p.Spec.Steps[0].Location, p.Spec.Steps[1].Location = "gpu-a", "gpu-a"
		return p
	}
	err := withWebhook.Client.Create(ctx, withClass("immediate", "e2e-immediate"))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("spec.modelStorage.cache.localVolume.storageClassName"),
		ContainSubstring("WaitForFirstConsumer")))

	p := withClass("local", "e2e-local")
	g.Expect(withWebhook.Client.Create(ctx, p)).To(Succeed())
	p.Spec.ModelStorage.Cache.LocalVolume.StorageClassName = "e2e-immediate"
	err = withWebhook.Client.Update(ctx, p)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a change to a class that binds Immediate: %v", err)

	c, recorded := withWebhook.ClientWithWarnings(t)
	g.Expect(c.Create(ctx, withClass("later", "e2e-not-yet"))).To(Succeed())
	g.Expect(recorded.All()).To(ContainElement(And(ContainSubstring("storageClassName"), ContainSubstring("no StorageClass e2e-not-yet"))))
}

func TestModelStorageIsImmutable(t *testing.T) {
	serveWebhooks(t)
	for _, env := range []*testenv.Env{withWebhook, withoutWebhook} {
		g := NewWithT(t)
		p := valid("moving")
		p.Namespace = namespace(t, env)
		g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
		p.Spec.ModelStorage.CSIParameter["share"] = "/elsewhere"
		err := env.Client.Update(context.Background(), p)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("create a new pipeline"))
	}
}

// The webhook names a lone step, sets ports from listenPort and picks Recreate for a single GPU replica; a missing
// node is a warning, not an error.
func TestDefaultsAndWarnings(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	p := valid("defaults")
	p.Namespace = namespace(t, withWebhook)
	p.Spec.Steps = []inferencev1alpha1.Step{
		{Name: "step-0", Image: "x", Args: map[string]string{"listenPort": "9080"}, Location: "no-such-node"},
		{Name: "step-1", Image: "y", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}},
	}
	c, recorded := withWebhook.ClientWithWarnings(t)
	g.Expect(c.Create(context.Background(), p)).To(Succeed())
	lone := valid("lone")
	lone.Namespace = p.Namespace
	lone.Spec.Steps = []inferencev1alpha1.Step{{Image: "x"}}
	g.Expect(c.Create(context.Background(), lone)).To(Succeed())
	g.Expect(lone.Spec.Steps[0].Name).To(Equal("step-0"))
	g.Expect(p.Spec.Steps[0].Port).To(Equal(int32(9080)))
	g.Expect(p.Spec.Steps[1].Port).To(Equal(int32(8080)))
	g.Expect(p.Spec.Steps[1].Strategy).To(Equal(appsv1.RecreateDeploymentStrategyType))
	g.Expect(p.Spec.Steps[0].Strategy).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
	g.Expect(recorded.All()).To(ContainElement(ContainSubstring("spec.steps[0].location: no node has kubernetes.io/hostname=no-such-node")))
}

// The samples are admitted as they are, with and without the webhook.
func TestSamplesAreValid(t *testing.T) {
	serveWebhooks(t)
	pair.CheckSamples(t, "pipeline-*.yaml", 2, func() client.Object { return &inferencev1alpha1.Pipeline{} }, nil)
}

// Pipeline a with step b-c and pipeline a-b with step c would both own a Deployment and a Service named a-b-c: the
// second is refused, naming the step and the first pipeline.
func TestClashingChildNamesAreRejected(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ns := namespace(t, withWebhook)
	first := valid("a")
	first.Namespace = ns
	first.Spec.Steps = []inferencev1alpha1.Step{{Name: "b-c", Image: "x"}}
	g.Expect(withWebhook.Client.Create(context.Background(), first)).To(Succeed())
	second := valid("a-b")
	second.Namespace = ns
	second.Spec.Steps = []inferencev1alpha1.Step{{Name: "c", Image: "x"}}
	// The webhook reads the pipelines from its manager's cache, which may not have seen the first one yet.
	g.Eventually(func() error {
		attempt := second.DeepCopy()
		err := withWebhook.Client.Create(context.Background(), attempt)
		if err == nil {
			_ = withWebhook.Client.Delete(context.Background(), attempt)
		}
		return err
	}, 10*time.Second, 50*time.Millisecond).Should(MatchError(And(ContainSubstring("spec.steps[0].name"), ContainSubstring("a-b-c"),
		ContainSubstring("pipeline a"))))
	second.Spec.Steps[0].Name = "d"
	g.Expect(withWebhook.Client.Create(context.Background(), second)).To(Succeed(), "a-b-d clashes with nothing")
}

// A location names a node by its kubernetes.io/hostname label, as the pinning does: no warning for a node found by
// that label under another name; a warning for a node's name that no node carries as its hostname label.
func TestLocationWarningsFollowTheHostnameLabel(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ns := namespace(t, withWebhook)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-machine-7", Labels: map[string]string{"kubernetes.io/hostname": ns + "-gpu-a"}}}
	g.Expect(withWebhook.Client.Create(context.Background(), n)).To(Succeed())
	t.Cleanup(func() { _ = withWebhook.Client.Delete(context.Background(), n) })
	p := valid("pinned")
	p.Namespace = ns
	p.Spec.Steps[0].Location = ns + "-gpu-a"
	p.Spec.Steps[1].Location = ns + "-machine-7"
	c, recorded := withWebhook.ClientWithWarnings(t)
	g.Expect(c.Create(context.Background(), p)).To(Succeed())
	g.Expect(recorded.All()).NotTo(ContainElement(ContainSubstring("spec.steps[0].location")))
	g.Expect(recorded.All()).To(ContainElement(ContainSubstring("spec.steps[1].location")))
}

// Updates that leave the spec alone (a finalizer removed) pass even when the spec breaks today's rules, so a
// pipeline admitted before them can still be deleted.
func TestUnchangedSpecUpdatesAreAllowed(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	p := valid("old-rules")
	p.Spec.Steps[0].Model = "../elsewhere"
	old := p.DeepCopy()
	cur := p.DeepCopy()
	cur.Finalizers = []string{"inference.keelson.dev/storage"}
	_, err := webhook.Validator{}.ValidateUpdate(context.Background(), old, cur)
	g.Expect(err).NotTo(HaveOccurred())
	cur.Spec.Steps[1].Image = "z"
	_, err = webhook.Validator{}.ValidateUpdate(context.Background(), old, cur)
	g.Expect(err).To(MatchError(ContainSubstring("spec.steps[0].model")), "a changed spec is checked in full")
}

// Stored defaults follow the step they came from: a CPU step given a GPU becomes Recreate, a new listenPort moves the
// port; a strategy the user set (one the defaults would not give) stays.
func TestDefaultsFollowTheStep(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	p := valid("follow")
	p.Namespace = namespace(t, withWebhook)
	p.Spec.Steps[0].Args = map[string]string{"listenPort": "9080"}
	p.Spec.Steps[1].Strategy = appsv1.RecreateDeploymentStrategyType
	g.Expect(withWebhook.Client.Create(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Steps[0].Strategy).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))

	p.Spec.Steps[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	p.Spec.Steps[0].Args["listenPort"] = "9090"
	p.Spec.Steps[1].Replicas = ptr.To[int32](3)
	g.Expect(withWebhook.Client.Update(context.Background(), p)).To(Succeed())
	g.Expect(p.Spec.Steps[0].Strategy).To(Equal(appsv1.RecreateDeploymentStrategyType), "the default follows the GPU")
	g.Expect(p.Spec.Steps[0].Port).To(Equal(int32(9090)), "the default follows listenPort")
	g.Expect(p.Spec.Steps[1].Strategy).To(Equal(appsv1.RecreateDeploymentStrategyType), "Recreate on a CPU step is the user's")
}

// A manifest written before every step had to be named, applied again as it was, is admitted and keeps the names the
// steps have; a step inserted before them unnamed is refused with its field path, and so is an unnamed step that
// changed.
func TestUnnamedStepsKeepTheirNamesOnlyWhenUnchanged(t *testing.T) {
	serveWebhooks(t)
	g := NewWithT(t)
	ctx := context.Background()
	p := valid("unnamed")
	p.Namespace = namespace(t, withWebhook)
	p.Spec.Steps[0].Name, p.Spec.Steps[1].Name = "step-0", "step-1"
	p.Spec.Steps[0].Next = []string{"step-1"}
	g.Expect(withWebhook.Client.Create(ctx, p)).To(Succeed())

	manifest := p.DeepCopy()
	manifest.Spec.Steps[0].Name, manifest.Spec.Steps[1].Name = "", ""
	manifest.Spec.Steps[0].Next = []string{"step-1"}
	g.Expect(withWebhook.Client.Update(ctx, manifest)).To(Succeed(), "the same manifest applied again")
	g.Expect(manifest.Spec.Steps[0].Name).To(Equal("step-0"))
	g.Expect(manifest.Spec.Steps[1].Name).To(Equal("step-1"))

	inserted := manifest.DeepCopy()
	inserted.Spec.Steps[0].Name, inserted.Spec.Steps[1].Name = "", ""
	inserted.Spec.Steps = append([]inferencev1alpha1.Step{{Image: "z", Model: inserted.Spec.Steps[0].Model, Next: []string{"step-0"}}},
		inserted.Spec.Steps...)
	g.Expect(withWebhook.Client.Update(ctx, inserted)).To(MatchError(ContainSubstring("spec.steps[0].name: Required value")))

	changed := manifest.DeepCopy()
	changed.Spec.Steps[1].Name = ""
	changed.Spec.Steps[1].Image = "other"
	g.Expect(withWebhook.Client.Update(ctx, changed)).To(MatchError(ContainSubstring("spec.steps[1].name: Required value")))
}

// The helm test's probe reaches only the webhook (testenv.WebhookPair.CheckProbe).
func TestProbeReachesOnlyTheWebhook(t *testing.T) {
	serveWebhooks(t)
	pair.CheckProbe(t, webhook.Probe())
}
