//go:build integration

package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/modelfetch"
)

// startFetchingController starts the controller with an image for fetches and the nodes' cache directory.
func startFetchingController(t *testing.T) {
	env.StartCountedManager(t, pipeline.CacheOptions(), func(client.Object) bool { return false },
		func(mgr ctrl.Manager, c client.Client) error {
			return (&pipeline.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), ModelFetch: pipeline.ModelFetch{
				Image: fetchImage, CacheDir: "/data/models", MaxSize: resource.MustParse("10Gi")}}).SetupWithManager(mgr)
		})
}

// podSpec waits for a step's Deployment and returns its pod template.
func (s *scenario) podSpec(name string) corev1.PodSpec {
	s.g.Eventually(func() *corev1.PodSpec {
		if d := s.deployment(name); d != nil {
			return &d.Spec.Template.Spec
		}
		return nil
	}, timeout, poll).ShouldNot(BeNil(), "Deployment %s", name)
	return s.deployment(name).Spec.Template.Spec
}

// cacheClaims lists the model cache claims of the scenario's namespace.
func (s *scenario) cacheClaims() []corev1.PersistentVolumeClaim {
	var claims corev1.PersistentVolumeClaimList
	s.g.Expect(env.Client.List(s.ctx, &claims, client.InNamespace(s.ns), client.HasLabels{pipeline.CacheClaimLabel})).To(Succeed())
	var live []corev1.PersistentVolumeClaim
	for _, c := range claims.Items {
		// One being deleted is held by its in-use protection (no controller here lifts it): deleted as far as
		// the pipeline controller goes. One of someone else's is not the pipeline's.
		if c.DeletionTimestamp == nil && len(c.OwnerReferences) > 0 {
			live = append(live, c)
		}
	}
	return live
}

// claimsOf lists the claims a step's Deployment names.
func (s *scenario) claimsOf(deployment string) []string {
	var claims []string
	if d := s.deployment(deployment); d != nil {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims = append(claims, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	return claims
}

// release plays the claim's in-use protection once no pod uses it: the claim's deletion ends. The controller may
// make a claim of the same name again at once, so what must be gone is this claim (its UID), not the name.
func (s *scenario) release(name string) {
	var uid types.UID
	s.g.Eventually(func() error {
		var c corev1.PersistentVolumeClaim
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &c); err != nil {
			return client.IgnoreNotFound(err)
		}
		uid = c.UID
		c.Finalizers = nil
		return env.Client.Update(s.ctx, &c)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() bool {
		var c corev1.PersistentVolumeClaim
		err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &c)
		return apierrors.IsNotFound(err) || (err == nil && c.UID != uid)
	}, timeout, poll).Should(BeTrue(), "claim %s gone", name)
}

// One pipeline takes its models from a path on its share, a claim of the namespace (pvc://, mounted read-only,
// never copied) and an http URI (fetched into the node's cache): each step's pod has its model at /models, and
// only the fetched step says where its model came from.
func TestModelSourcesMix(t *testing.T) {
	s := newScenario(t)
	startFetchingController(t)
	uri := "https://models.example/recognize.onnx"
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "share",
				ReadOnly: ptrTo(false)},
			Steps: []inferencev1alpha1.Step{
				{Name: "share", Image: "x", Model: "face/detect"},
				{Name: "claim", Image: "x", Model: "pvc://shared-models/face/align"},
				{Name: "fetched", Image: "x", Model: uri},
			},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())

	share := s.podSpec("mixed-share")
	s.g.Expect(share.InitContainers).To(BeEmpty())
	s.g.Expect(share.Volumes).To(ConsistOf(HaveField("VolumeSource.PersistentVolumeClaim", Equal(
		&corev1.PersistentVolumeClaimVolumeSource{ClaimName: "share", ReadOnly: false}))))
	s.g.Expect(share.Containers[0].VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "models", MountPath: "/models",
		SubPath: "face/detect"}), "the share's own read-only setting")

	claim := s.podSpec("mixed-claim")
	s.g.Expect(claim.InitContainers).To(BeEmpty(), "a claim's model is mounted, not fetched")
	s.g.Expect(claim.Volumes).To(ConsistOf(HaveField("VolumeSource.PersistentVolumeClaim", Equal(
		&corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared-models", ReadOnly: true}))))
	s.g.Expect(claim.Containers[0].VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "models", MountPath: "/models",
		SubPath: "face/align", ReadOnly: true}), "another's claim is always read-only")

	fetched := s.podSpec("mixed-fetched")
	s.g.Expect(fetched.InitContainers).To(ConsistOf(HaveField("Name", pipeline.FetchContainer), HaveField("Name", pipeline.HoldContainer)))
	s.g.Expect(fetched.Volumes).To(ContainElement(HaveField("VolumeSource.HostPath.Path", "/data/models/namespaces/"+s.ns)))
	s.g.Expect(slices.ContainsFunc(fetched.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })).To(BeFalse())

	digest := "sha256:" + strings.Repeat("cd", 32)
	s.stepPod("mixed", "fetched", fetched0(uri, digest))
	s.g.Eventually(func() *inferencev1alpha1.StepModel { return s.stepStatus("mixed", "fetched").Model }, timeout, poll).Should(
		HaveField("Digest", digest))
	s.g.Expect(s.stepStatus("mixed", "share").Model).To(BeNil())
	s.g.Expect(s.stepStatus("mixed", "claim").Model).To(BeNil())
}

// localCachePipeline creates a pipeline of storage cache whose cache is on local volumes (class local-models, 20Gi
// claims), and returns it as stored.
func (s *scenario) localCachePipeline(name string, steps ...inferencev1alpha1.Step) *inferencev1alpha1.Pipeline {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageCache,
				Cache: &inferencev1alpha1.ModelCache{LocalVolume: &inferencev1alpha1.LocalCacheVolume{
					StorageClassName: "local-models", Size: ptrTo(resource.MustParse("20Gi"))}}},
			Steps: steps,
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	return s.get(name)
}

// fetched0 is a running step pod's status after a fetch that downloaded uri.
func fetched0(uri, digest string) corev1.PodStatus {
	return fetched(0, `{"uri":"`+uri+`","digest":"`+digest+`","size":1024}`, true)
}

// expectSharedCache checks that the step's pods mount the node's cache claim, hold their model in it, and show the
// server its model's directory only.
func (s *scenario) expectSharedCache(step, claim, key string) {
	pod := s.podSpec(step)
	s.g.Expect(pod.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", claim)), "step %s", step)
	s.g.Expect(pod.InitContainers).To(ContainElement(HaveField("Name", pipeline.HoldContainer)), "step %s: its claim is shared", step)
	s.g.Expect(strings.Join(pod.InitContainers[0].Args, " ")).To(ContainSubstring("--cache-max-size 6485Mi"),
		"a third of the claim less 5%: room to download a new model's archive and unpack it beside those kept")
	s.g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "model-cache",
		MountPath: pipeline.CacheMountPath + "/" + key, SubPath: key, ReadOnly: true}), "the server sees its model's directory only")
}

// With the cache on local volumes, the controller makes one claim per node its fetching steps are pinned to (of the
// class and size asked for, owned by the pipeline), shared by the steps on that node; a step without a location
// fetches into a volume of its pod. No pod mounts a directory of the node. A claim no step needs any more is
// deleted; a claim of that name that is someone else's is never written, nor is the step that would mount it.
func TestLocalCacheVolumes(t *testing.T) {
	s := newScenario(t)
	startFetchingController(t)
	uri := "https://models.example/detect.tar.gz"
	node1, node2 := s.ns+"-gpu-1", s.ns+"-gpu-2"
	s.node(node1, 0, false)
	s.node(node2, 0, false)
	p := s.localCachePipeline("local",
		inferencev1alpha1.Step{Name: "a", Image: "x", Model: uri, Location: node1},
		inferencev1alpha1.Step{Name: "b", Image: "x", Model: uri, Location: node1},
		inferencev1alpha1.Step{Name: "c", Image: "x", Model: uri, Location: node2},
		inferencev1alpha1.Step{Name: "d", Image: "x", Model: uri},
		inferencev1alpha1.Step{Name: "e", Image: "x", Model: "pvc://shared-models/e", Location: node2})
	claim1, claim2 := pipeline.CacheClaimName(p, node1), pipeline.CacheClaimName(p, node2)
	s.g.Expect(claim1).NotTo(Equal(claim2))

	s.g.Eventually(func() []string {
		var names []string
		for _, c := range s.cacheClaims() {
			names = append(names, c.Name)
		}
		return names
	}, timeout, poll).Should(ConsistOf(claim1, claim2))
	for _, c := range s.cacheClaims() {
		s.g.Expect(*c.Spec.StorageClassName).To(Equal("local-models"))
		s.g.Expect(c.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))
		s.g.Expect(c.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("20Gi")))
		s.g.Expect(metav1.IsControlledBy(&c, p)).To(BeTrue(), "deleted with the pipeline")
	}
	key, err := modelfetch.KeyOf(uri)
	s.g.Expect(err).NotTo(HaveOccurred())
	for step, want := range map[string]string{"a": claim1, "b": claim1, "c": claim2} {
		s.expectSharedCache("local-"+step, want, key)
	}
	unpinned := s.podSpec("local-d")
	s.g.Expect(unpinned.InitContainers).To(ConsistOf(HaveField("Name", pipeline.FetchContainer)),
		"a cache of the pod's own needs no hold: nothing else evicts from it")
	s.g.Expect(unpinned.Volumes).To(ContainElement(HaveField("VolumeSource.EmptyDir.SizeLimit", ptrTo(resource.MustParse("20Gi")))))
	for _, step := range []string{"a", "b", "c", "d", "e"} {
		for _, v := range s.podSpec("local-" + step).Volumes {
			s.g.Expect(v.HostPath).To(BeNil(), "step %s mounts a directory of its node", step)
		}
	}

	// Step c moves to node 1: node 2's claim serves no step any more, and goes.
	s.edit("local", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[2].Location = node1 })
	s.g.Eventually(func() int { return len(s.cacheClaims()) }, timeout, poll).Should(Equal(1))
	s.g.Expect(s.cacheClaims()[0].Name).To(Equal(claim1))

	// Someone else's claim has the name of the cache claim the next node would get: never written, and the step
	// that would mount it is not written either.
	node3 := s.ns + "-gpu-3"
	s.node(node3, 0, false)
	// It even carries the labels of the pipeline's cache claims (copied from one of them): only an owner makes a
	// claim the pipeline's.
	takenLabels := map[string]string{"team": "vision", inferencev1alpha1.PipelineLabel: "local", pipeline.CacheClaimLabel: "true"}
	taken := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pipeline.CacheClaimName(p, node3), Namespace: s.ns,
		Labels: takenLabels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	s.g.Expect(env.Client.Create(s.ctx, taken)).To(Succeed())
	s.edit("local", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Location = node3 })
	s.g.Eventually(func() string { return s.stepStatus("local", "b").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNameTaken))
	s.g.Expect(s.stepStatus("local", "b").Message).To(ContainSubstring(taken.Name))
	s.g.Consistently(func() []string { return s.claimsOf("local-b") }, "500ms", poll).Should(ConsistOf(claim1),
		"the step keeps the claim it had")
	var after corev1.PersistentVolumeClaim
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(taken), &after)).To(Succeed())
	s.g.Expect(after.DeletionTimestamp).To(BeNil())
	s.g.Expect(after.Labels).To(Equal(takenLabels))
	s.g.Expect(after.OwnerReferences).To(BeEmpty())

	// Back to the nodes' directory: no claim is needed any more.
	s.edit("local", func(p *inferencev1alpha1.Pipeline) {
		p.Spec.ModelStorage.Cache = nil
		p.Spec.Steps[1].Location = node1
	})
	s.g.Eventually(func() int { return len(s.cacheClaims()) }, timeout, poll).Should(BeZero())
	s.g.Eventually(func() []corev1.Volume { return s.deployment("local-a").Spec.Template.Spec.Volumes }, timeout, poll).Should(
		ContainElement(HaveField("VolumeSource.HostPath.Path", "/data/models/namespaces/"+s.ns)))
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(taken), &after)).To(Succeed())
	s.g.Expect(after.DeletionTimestamp).To(BeNil(), "someone else's claim is never deleted")
}

// A step held back keeps the claim its Deployment names, and that claim stays while it is named, even when the spec
// wants it no more: step c, alone on its node, moves to a node whose claim name is taken. A claim still being
// deleted (the size changed and changed back before its pods were gone) holds its steps back until it is gone, then
// is made again.
func TestLocalCacheClaimsInUseStay(t *testing.T) {
	s := newScenario(t)
	startFetchingController(t)
	uri := "https://models.example/detect.tar.gz"
	node1, node2, node3 := s.ns+"-gpu-1", s.ns+"-gpu-2", s.ns+"-gpu-3"
	for _, n := range []string{node1, node2, node3} {
		s.node(n, 0, false)
	}
	p := s.localCachePipeline("inuse",
		inferencev1alpha1.Step{Name: "a", Image: "x", Model: uri, Location: node1},
		inferencev1alpha1.Step{Name: "c", Image: "x", Model: uri, Location: node2})
	claim2 := pipeline.CacheClaimName(p, node2)
	s.g.Eventually(func() []string { return s.claimsOf("inuse-c") }, timeout, poll).Should(ConsistOf(claim2))

	taken := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pipeline.CacheClaimName(p, node3), Namespace: s.ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	s.g.Expect(env.Client.Create(s.ctx, taken)).To(Succeed())
	s.edit("inuse", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Location = node3 })
	s.g.Eventually(func() string { return s.stepStatus("inuse", "c").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNameTaken))
	s.g.Expect(s.stepStatus("inuse", "c").Message).To(ContainSubstring("remove that claim, or rename the pipeline"))
	s.g.Consistently(func() []string {
		var names []string
		for _, c := range s.cacheClaims() {
			names = append(names, c.Name)
		}
		return names
	}, "1s", poll).Should(ContainElement(claim2), "the claim step c's Deployment still names is kept")
	s.g.Expect(s.claimsOf("inuse-c")).To(ConsistOf(claim2))

	// Back on node 2, then a size and back: the first size's claims are being deleted when the spec wants them
	// again. The steps stay on the claims they have until those are gone.
	s.edit("inuse", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[1].Location = node2 })
	s.g.Eventually(func() string { return s.stepStatus("inuse", "c").Reason }, timeout, poll).ShouldNot(Equal(inferencev1alpha1.ReasonNameTaken))
	claim1 := pipeline.CacheClaimName(p, node1)
	s.edit("inuse", func(p *inferencev1alpha1.Pipeline) {
		p.Spec.ModelStorage.Cache.LocalVolume.Size = ptrTo(resource.MustParse("30Gi"))
	})
	bigger := s.get("inuse")
	big1 := pipeline.CacheClaimName(bigger, node1)
	s.g.Eventually(func() []string { return s.claimsOf("inuse-a") }, timeout, poll).Should(ConsistOf(big1))
	s.g.Eventually(func() []string {
		var names []string
		for _, c := range s.cacheClaims() {
			names = append(names, c.Name)
		}
		return names
	}, timeout, poll).ShouldNot(ContainElement(claim1), "the old size's claim is deleted once no Deployment names it")
	s.edit("inuse", func(p *inferencev1alpha1.Pipeline) {
		p.Spec.ModelStorage.Cache.LocalVolume.Size = ptrTo(resource.MustParse("20Gi"))
	})
	s.g.Consistently(func() []string { return s.claimsOf("inuse-a") }, "1s", poll).Should(ConsistOf(big1),
		"a claim being deleted is no claim for a new pod: the step keeps the one it has")
	s.release(claim1)
	s.g.Eventually(func() []string { return s.claimsOf("inuse-a") }, timeout, poll).Should(ConsistOf(claim1))
	var again corev1.PersistentVolumeClaim
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: claim1}, &again)).To(Succeed())
	s.g.Expect(again.DeletionTimestamp).To(BeNil(), "made again")

	// Someone deletes the claim under the step's pods (to clear the cache): it goes when they stop. The step is not
	// frozen meanwhile: a new version of it is written, its new pods waiting for the claim.
	s.g.Expect(env.Client.Delete(s.ctx, &again)).To(Succeed())
	s.g.Eventually(func() bool {
		var c corev1.PersistentVolumeClaim
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: claim1}, &c) == nil && c.DeletionTimestamp != nil
	}, timeout, poll).Should(BeTrue())
	s.edit("inuse", func(p *inferencev1alpha1.Pipeline) { p.Spec.Steps[0].Image = "x:v2" })
	s.g.Eventually(func() string { return s.deployment("inuse-a").Spec.Template.Spec.Containers[0].Image }, timeout, poll).Should(Equal("x:v2"))
	s.g.Expect(s.claimsOf("inuse-a")).To(ConsistOf(claim1))
}
