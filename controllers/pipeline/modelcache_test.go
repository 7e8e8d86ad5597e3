//go:build integration

package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/modelfetch"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

const fetchImage = "registry.example/keelson/pipeline-controller:v1"

// cachedPipeline creates a one-step pipeline whose model is fetched into the node's cache.
func (s *scenario) cachedPipeline(name, model string, cache *inferencev1alpha1.ModelCache) {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageCache, Cache: cache},
			Steps: []inferencev1alpha1.Step{{Name: "a", Image: "server:v1", Model: model, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
}

// fetched is a step pod's status once its fetch-model init container ended with result (its termination message).
func fetched(exitCode int32, result string, running bool) corev1.PodStatus {
	t := &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: result, Reason: "Completed"}
	fetch := corev1.ContainerStatus{Name: pipeline.FetchContainer, Image: fetchImage, State: corev1.ContainerState{Terminated: t}}
	if exitCode != 0 {
		t.Reason = "Error"
		fetch.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		fetch.LastTerminationState = corev1.ContainerState{Terminated: t}
	}
	st := corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{fetch}}
	if running {
		st.Phase = corev1.PodRunning
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", Image: "server:v1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	return st
}

// With storage cache, a step's pod fetches its model with the controller's own image (an init container, root
// without any capability, writing the node's cache directory) and the server reads it read-only through the link
// at MODEL_PATH; no volume or claim is made. The step's status says where its model came from, and a failed fetch
// is the step's reason, with the fetch's own.
func TestModelCache(t *testing.T) {
	s := newScenario(t)
	env.StartCountedManager(t, pipeline.CacheOptions(), func(client.Object) bool { return false },
		func(mgr ctrl.Manager, c client.Client) error {
			return (&pipeline.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), ModelFetch: pipeline.ModelFetch{
				Image: fetchImage, CacheDir: "/data/models", MaxSize: resource.MustParse("10Gi")}}).SetupWithManager(mgr)
		})
	uri := "https://models.example/detect.tar.gz"
	s.cachedPipeline("cached", uri, &inferencev1alpha1.ModelCache{S3SecretName: "store"})

	s.g.Eventually(func() *corev1.PodSpec {
		if d := s.deployment("cached-a"); d != nil {
			return &d.Spec.Template.Spec
		}
		return nil
	}, timeout, poll).ShouldNot(BeNil())
	pod := s.deployment("cached-a").Spec.Template.Spec
	s.g.Expect(pod.InitContainers).To(HaveLen(2))
	fetch := pod.InitContainers[0]
	// Then the hold, a sidecar that keeps the model in the cache while the pod runs: read-only, the same image.
	hold := pod.InitContainers[1]
	s.g.Expect(hold.Name).To(Equal(pipeline.HoldContainer))
	s.g.Expect(hold.Image).To(Equal(fetchImage))
	s.g.Expect(*hold.RestartPolicy).To(Equal(corev1.ContainerRestartPolicyAlways))
	s.g.Expect(strings.Join(hold.Args, " ")).To(Equal("hold-model --links-dir /models --cache-dir " + pipeline.CacheMountPath))
	s.g.Expect(hold.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "model-cache", MountPath: pipeline.CacheMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: "models", MountPath: "/models", ReadOnly: true}))
	s.g.Expect(hold.Resources.Limits).To(HaveKey(corev1.ResourceMemory), "beside a server with requests: a quota on limits finds it")
	s.g.Expect(*hold.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	s.g.Expect(hold.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	s.g.Expect(fetch.Name).To(Equal(pipeline.FetchContainer))
	s.g.Expect(fetch.Image).To(Equal(fetchImage))
	s.g.Expect(strings.Join(fetch.Args, " ")).To(Equal("fetch-model --uri " + uri + " --cache-dir " + pipeline.CacheMountPath +
		" --cache-max-size 10Gi --links-dir /models --s3-secret-dir /var/run/secrets/keelson/model-s3"))
	s.g.Expect(fetch.Resources.Requests).To(Equal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}),
		"the fetch asks for the server's cpu, so the pod is no larger and keeps its QoS class")
	s.g.Expect(fetch.Resources.Limits).To(BeEmpty())
	s.g.Expect(*fetch.SecurityContext.RunAsUser).To(BeZero())
	s.g.Expect(*fetch.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	s.g.Expect(fetch.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	s.g.Expect(fetch.SecurityContext.Privileged).To(BeNil())
	hostPath := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil })
	s.g.Expect(hostPath).NotTo(Equal(-1))
	s.g.Expect(pod.Volumes[hostPath].HostPath.Path).To(Equal("/data/models/namespaces/"+s.ns), "each namespace has a cache of its own")
	key, err := modelfetch.KeyOf(uri)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })).To(BeFalse())
	server := pod.Containers[0]
	s.g.Expect(server.Env).To(ContainElement(corev1.EnvVar{Name: pipelinespec.EnvModelPath, Value: pipeline.ModelsMountPath}))
	for _, m := range server.VolumeMounts {
		s.g.Expect(m.ReadOnly).To(BeTrue(), "the server mounts %s writable", m.Name)
	}
	// The server mounts its model's directory of the cache only, at the path the fetch's links point into.
	s.g.Expect(server.VolumeMounts).To(ContainElement(HaveField("MountPath", pipeline.CacheMountPath+"/"+key)))
	s.g.Expect(server.VolumeMounts).NotTo(ContainElement(HaveField("MountPath", pipeline.CacheMountPath)))
	s.g.Expect(pod.Volumes).To(ContainElement(HaveField("VolumeSource.HostPath.Path", "/data/models/namespaces/"+s.ns+"/"+key)))
	var claims corev1.PersistentVolumeClaimList
	s.g.Expect(env.Client.List(s.ctx, &claims, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(claims.Items).To(BeEmpty())
	s.g.Eventually(func() string {
		c := meta.FindStatusCondition(s.get("cached").Status.Conditions, inferencev1alpha1.ConditionStorageReady)
		if c == nil || c.Status != metav1.ConditionTrue {
			return ""
		}
		return c.Reason
	}, timeout, poll).Should(Equal(inferencev1alpha1.ReasonCache))

	// The fetch reports a cache hit.
	digest := "sha256:" + strings.Repeat("ab", 32)
	s.stepPod("cached", "a", fetched(0, `{"uri":"`+uri+`","digest":"`+digest+`","size":209715200,"cacheHit":true}`, true))
	s.g.Eventually(func() *inferencev1alpha1.StepModel { return s.stepStatus("cached", "a").Model }, timeout, poll).Should(
		Equal(&inferencev1alpha1.StepModel{URI: uri, Digest: digest, Size: ptrTo(resource.MustParse("200Mi")), CacheHit: true}))

	// A fetch that failed, and is retried with the pod's back-off, is the step's reason.
	s.g.Expect(env.Client.Delete(s.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cached-a-x", Namespace: s.ns}})).To(Succeed())
	s.g.Eventually(func() *inferencev1alpha1.StepModel { return s.stepStatus("cached", "a").Model }, timeout, poll).Should(BeNil())
	s.stepPod("cached", "a", fetched(1, `{"uri":"`+uri+`","reason":"NotFound","message":"`+uri+`: 404 Not Found"}`, false))
	s.g.Eventually(func() string { return s.stepStatus("cached", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonModelFetchFailed))
	st := s.stepStatus("cached", "a")
	s.g.Expect(st.Message).To(ContainSubstring("NotFound"))
	s.g.Expect(st.Model.Reason).To(Equal("NotFound"))
}

// A controller started without its image for fetches cannot run a pipeline of storage cache: the step says so,
// and names what is missing.
func TestModelCacheNeedsTheFetchImage(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.cachedPipeline("unfetchable", "https://models.example/m.onnx", nil)
	s.g.Eventually(func() string { return s.stepStatus("unfetchable", "a").Message }, timeout, poll).Should(
		ContainSubstring(pipeline.EnvFetchImage))
	s.g.Expect(s.deployment("unfetchable-a")).To(BeNil())
}

func ptrTo[T any](v T) *T { return &v }
