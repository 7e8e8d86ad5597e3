package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/apply"
	"github.com/keelson-dev/keelson/internal/modelfetch"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// The node-local model cache (the steps whose model is an http(s):// or s3:// URI): where it is in a step's containers, and what a step's pod gets to
// fetch into it.
const (
	// CacheMountPath is where the namespace's cache is mounted in a step's containers: the same path in the fetch
	// and in the server, so the links the fetch leaves in /models resolve in both.
	CacheMountPath = "/var/cache/keelson/models"
	// FetchContainer is the init container that fetches the model: pipeline-controller fetch-model.
	FetchContainer = pipelinespec.FetchContainer
	// HoldContainer is the sidecar that holds the model in a shared cache while the pod runs:
	// pipeline-controller hold-model.
	HoldContainer  = pipelinespec.HoldContainer
	cacheVolume    = "model-cache"
	modelVolume    = "model"
	s3SecretVolume = "model-s3"
	s3SecretPath   = "/var/run/secrets/keelson/model-s3"
	caBundleVolume = "model-ca"
	caBundlePath   = "/var/run/secrets/keelson/model-ca"
	// defaultCABundleKey is the key of a caBundle ConfigMap when the pipeline names none (the CRD defaults it too).
	defaultCABundleKey = "ca.crt"
	// maxModelMessage bounds what a failed fetch's message adds to a step's status message.
	maxModelMessage = 512
)

// withModelCache gives a step's pod its model from the cache on its node, and the fetch that fills it as an init
// container (f.Image; run as root to write the cache, with no capability and a read-only root; the server's cpu
// and memory, so the pod's size and QoS class stay the server's). The server reads /models (an emptyDir of links
// to the model) and its model's directory of the cache, both read-only; its MODEL_PATH is /models as for any model.
// The cache is the namespace's directory of the node (a hostPath), or with localVolume the pipeline's claim on the
// step's node; a step without a location that would have such a claim gets a cache of its own pod instead.
func withModelCache(pod *corev1.PodSpec, p *inferencev1alpha1.Pipeline, s inferencev1alpha1.Step, f ModelFetch) {
	// The server mounts only its model's directory (its URI's key): not the models other steps fetched, with
	// credentials of their own.
	key, _ := modelfetch.KeyOf(s.Model) // admission refused a URI that does not parse; the fetch says so otherwise
	maxSize := f.MaxSize
	models := corev1.Volume{Name: modelsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	serverCache := corev1.VolumeMount{Name: cacheVolume, MountPath: path.Join(CacheMountPath, key), SubPath: key, ReadOnly: true}
	shared := true // the cache outlives the pod; not a volume of the pod's own
	switch v := localCache(p); {
	case v == nil:
		cache := f.cacheOf(p.Namespace)
		pod.Volumes = []corev1.Volume{models,
			{Name: cacheVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: cache, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
			{Name: modelVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: path.Join(cache, key), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		}
		serverCache = corev1.VolumeMount{Name: modelVolume, MountPath: path.Join(CacheMountPath, key), ReadOnly: true}
	case s.Location == "":
		shared = false
		maxSize = localCacheBound(v)
		pod.Volumes = []corev1.Volume{models, {Name: cacheVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(localCacheSize(v))}}}}
	default:
		maxSize = localCacheBound(v)
		pod.Volumes = []corev1.Volume{models, {Name: cacheVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: CacheClaimName(p, s.Location)}}}}
	}
	args := []string{modelfetch.Command, "--uri", s.Model, "--cache-dir", CacheMountPath, "--cache-max-size", maxSize.String(),
		"--links-dir", ModelsMountPath}
	mounts := []corev1.VolumeMount{{Name: cacheVolume, MountPath: CacheMountPath}, {Name: modelsVolume, MountPath: ModelsMountPath}}
	if c := p.Spec.ModelStorage.Cache; c != nil && c.S3SecretName != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: s3SecretVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: c.S3SecretName}}})
		args = append(args, "--s3-secret-dir", s3SecretPath)
		mounts = append(mounts, corev1.VolumeMount{Name: s3SecretVolume, MountPath: s3SecretPath, ReadOnly: true})
	}
	if c := p.Spec.ModelStorage.Cache; c != nil && c.CABundle != nil && c.CABundle.Name != "" {
		key := c.CABundle.Key
		if key == "" {
			key = defaultCABundleKey
		}
		// Only the named key, under a name of its own: the ConfigMap may hold other keys, and a key's name is the
		// user's.
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: caBundleVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c.CABundle.Name},
				Items: []corev1.KeyToPath{{Key: key, Path: defaultCABundleKey}}}}})
		args = append(args, "--ca-file", path.Join(caBundlePath, defaultCABundleKey))
		mounts = append(mounts, corev1.VolumeMount{Name: caBundleVolume, MountPath: caBundlePath, ReadOnly: true})
	}
	pod.InitContainers = []corev1.Container{{
		Name: FetchContainer, Image: f.Image, Args: args, VolumeMounts: mounts, Env: slices.Clone(f.Env),
		Resources:                cpuAndMemory(s.Resources),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext:          fetchSecurity(),
	}}
	if shared {
		// A shared cache evicts what no pod holds: the hold keeps the model while the pod runs, so that a server
		// that restarts after the cache's keep-for finds its model where its links point.
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: HoldContainer, Image: f.Image, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Args: []string{modelfetch.HoldCommand, "--links-dir", ModelsMountPath, "--cache-dir", CacheMountPath},
			VolumeMounts: []corev1.VolumeMount{{Name: cacheVolume, MountPath: CacheMountPath, ReadOnly: true},
				{Name: modelsVolume, MountPath: ModelsMountPath, ReadOnly: true}},
			Resources: holdResources(s.Resources, f), SecurityContext: fetchSecurity(),
		})
	}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: modelsVolume, MountPath: ModelsMountPath, ReadOnly: true}, serverCache}
}

// fetchSecurity is the security context of the fetch and the hold: root (the cache's directory is root's, made by
// the kubelet or a volume's provisioner) without any capability, no privilege escalation, a read-only root.
func fetchSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// holdResources are the hold's resources, chosen to keep the pod's QoS class the server's: none beside a server
// that asks for no cpu or memory (BestEffort), else requests equal to limits for both (the pod stays Guaranteed
// beside a Guaranteed server, Burstable beside a Burstable one, and a ResourceQuota on limits finds them set): f's
// hold size, or the defaults.
func holdResources(server corev1.ResourceRequirements, f ModelFetch) corev1.ResourceRequirements {
	r := cpuAndMemory(server)
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.ResourceRequirements{}
	}
	cpu, memory := f.HoldCPU, f.HoldMemory
	if cpu.IsZero() {
		cpu = resource.MustParse(DefaultHoldCPU)
	}
	if memory.IsZero() {
		memory = resource.MustParse(DefaultHoldMemory)
	}
	both := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
	return corev1.ResourceRequirements{Requests: both, Limits: both.DeepCopy()}
}

// withStorageModel gives a step's pod its model on the pipeline's storage (nfs, pvc): the claim at /models, the
// model's path as the sub-path, read-only unless the storage says otherwise.
func withStorageModel(pod *corev1.PodSpec, p *inferencev1alpha1.Pipeline, s inferencev1alpha1.Step) {
	readOnly := p.Spec.ModelStorage.ReadOnly == nil || *p.Spec.ModelStorage.ReadOnly
	pod.Volumes = []corev1.Volume{{Name: modelsVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: ClaimName(p), ReadOnly: readOnly}}}}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: modelsVolume, MountPath: ModelsMountPath, SubPath: s.Model, ReadOnly: readOnly}}
}

// withClaimModel gives a step's pod its model on a claim of the namespace (pvc://claim/path): the claim at /models,
// the path as the sub-path, always read-only (the claim is the user's, and may be other steps' too).
func withClaimModel(pod *corev1.PodSpec, s inferencev1alpha1.Step) {
	claim, sub, _ := pipelinespec.ParseClaimModel(s.Model) // admission refused a model that does not parse; the pod says so otherwise
	pod.Volumes = []corev1.Volume{{Name: modelsVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: claim, ReadOnly: true}}}}
	pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: modelsVolume, MountPath: ModelsMountPath, SubPath: sub, ReadOnly: true}}
}

// cpuAndMemory is the cpu and memory of r, nothing else: a GPU asked for by the init container too would be held
// twice by a pod of no more.
func cpuAndMemory(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	pick := func(l corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[name]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q
			}
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: pick(r.Requests), Limits: pick(r.Limits)}
}

// stepModel reads where a step's model came from: the fetch's result, which it leaves as its termination message,
// in the newest live pod of the step's current template that has one (a pod still fetching has none yet). A
// failed fetch that is being retried shows its last failure. Nil when no pod has fetched yet.
func stepModel(pods []corev1.Pod) *inferencev1alpha1.StepModel {
	hash := currentTemplate(pods)
	var live []*corev1.Pod
	for i := range pods {
		if p := &pods[i]; alive(*p) && p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			live = append(live, p)
		}
	}
	sort.Slice(live, func(i, j int) bool {
		a, b := live[i], live[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name > b.Name
	})
	for _, p := range live {
		if m := fetchResult(p); m != nil {
			return m
		}
	}
	return nil
}

// fetchResult reads the fetch's result in one pod, or nil.
func fetchResult(p *corev1.Pod) *inferencev1alpha1.StepModel {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != FetchContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			var r modelfetch.Result
			if json.Unmarshal([]byte(strings.TrimSpace(t.Message)), &r) != nil || r.URI == "" {
				continue
			}
			m := &inferencev1alpha1.StepModel{URI: r.URI, Digest: r.Digest, CacheHit: r.CacheHit, Reason: r.Reason,
				Message: truncateRunes(r.Message, maxModelMessage)}
			if r.Size > 0 {
				m.Size = resource.NewQuantity(r.Size, resource.BinarySI)
			}
			return m
		}
	}
	return nil
}

// truncateRunes cuts s to at most n characters, marking the cut.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// StepTemplateAnnotation holds, on a step's Deployment, the hash of its pod template as the step's spec made it:
// without the image and environment of the fetch and hold containers, which are the platform's (stepTemplateHash).
const StepTemplateAnnotation = "inference.keelson.dev/step-template"

// keepFetcher keeps the image and environment of the fetch and hold containers a step's Deployment runs for as
// long as the step's own pod template is unchanged. They are the platform's settings (the controller's image, the
// operators' proxy and CA bundle), not the step's: taking a new one would restart every model-fetching step of the
// cluster on a helm upgrade. A step whose own template changes rolls anyway, and takes the fetcher of the day with
// it; a change outside the template (replicas) keeps it. It also stamps desired with StepTemplateAnnotation.
func keepFetcher(existing, desired client.Object) {
	want, ok := desired.(*appsv1.Deployment)
	if !ok {
		return
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[StepTemplateAnnotation] = stepTemplateHash(want.Spec.Template)
	have, ok := existing.(*appsv1.Deployment)
	if !ok {
		return
	}
	if _, stamped := have.Annotations[StepTemplateAnnotation]; !stamped {
		defer unstampUnlessChanged(have, want)
	}
	trial := want.DeepCopy()
	kept := false
	for i := range trial.Spec.Template.Spec.InitContainers {
		c := &trial.Spec.Template.Spec.InitContainers[i]
		if c.Name != FetchContainer && c.Name != HoldContainer {
			continue
		}
		j := slices.IndexFunc(have.Spec.Template.Spec.InitContainers, func(o corev1.Container) bool { return o.Name == c.Name })
		if j < 0 {
			continue
		}
		old := have.Spec.Template.Spec.InitContainers[j]
		if c.Image != old.Image || !equality.Semantic.DeepEqual(c.Env, old.Env) {
			c.Image, c.Env = old.Image, slices.Clone(old.Env)
			kept = true
		}
	}
	if !kept {
		return
	}
	unchanged := have.Annotations[StepTemplateAnnotation] == want.Annotations[StepTemplateAnnotation]
	if _, stamped := have.Annotations[StepTemplateAnnotation]; !stamped {
		// Written by a version that did not stamp it: unchanged when keeping the fetcher makes the Deployment what
		// was last applied, stamp aside, and replicas as they are (a scale is not a change of the step's pods).
		cmp := trial.DeepCopy()
		delete(cmp.Annotations, StepTemplateAnnotation)
		cmp.Spec.Replicas = have.Spec.Replicas
		needed, err := apply.Needed(have, cmp)
		unchanged = err == nil && !needed
	}
	if unchanged {
		*want = *trial
	}
}

// unstampUnlessChanged leaves want without its StepTemplateAnnotation when that is all it would change of have, a
// Deployment written by a version that did not stamp: a write of a Deployment's annotations bumps its generation,
// and an upgrade leaves every step's Deployment as it was. It is stamped with its next change.
func unstampUnlessChanged(have, want *appsv1.Deployment) {
	trial := want.DeepCopy()
	delete(trial.Annotations, StepTemplateAnnotation)
	if needed, err := apply.Needed(have, trial); err == nil && !needed {
		*want = *trial
	}
}

// stepTemplateHash fingerprints a step's pod template without the fetch and hold containers' image and environment.
func stepTemplateHash(t corev1.PodTemplateSpec) string {
	c := t.DeepCopy()
	for i := range c.Spec.InitContainers {
		if n := c.Spec.InitContainers[i].Name; n == FetchContainer || n == HoldContainer {
			c.Spec.InitContainers[i].Image, c.Spec.InitContainers[i].Env = "", nil
		}
	}
	b, _ := json.Marshal(c) // a PodTemplateSpec always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}
