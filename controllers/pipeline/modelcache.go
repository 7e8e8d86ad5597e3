package pipeline

import (
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline/modelfetch"
)

// The node-local model cache (storage cache): where it is on the node and in the containers, and what a step's
// pod gets to fetch into it.
const (
	// DefaultCacheHostPath and DefaultCacheMaxSize are the cache's directory on each node and its bound, when the
	// pipeline names none.
	DefaultCacheHostPath = "/var/lib/keelson/models"
	DefaultCacheMaxSize  = "50Gi"
	// CacheMountPath is where the cache is mounted in a step's containers: the same path in the fetch and in the
	// server, so the link the fetch leaves at ModelLink points at the model in both.
	CacheMountPath = "/var/cache/keelson/models"
	// ModelLink is the step's model with storage cache: a link to its directory in the cache (MODEL_PATH).
	ModelLink = ModelsMountPath + "/model"
	// FetchContainer is the init container that fetches the model: pipeline-controller fetch-model.
	FetchContainer = "fetch-model"
	// EnvFetchImage names the image the controller runs fetches with: its own (the chart sets it).
	EnvFetchImage = "KEELSON_MODEL_FETCH_IMAGE"

	cacheVolume    = "model-cache"
	s3SecretVolume = "model-s3"
	s3SecretPath   = "/var/run/secrets/keelson/model-s3"
)

// cacheOf is the pipeline's cache settings, defaults filled in.
func cacheOf(p *inferencev1alpha1.Pipeline) (hostPath string, maxSize resource.Quantity, s3Secret string) {
	hostPath, maxSize = DefaultCacheHostPath, resource.MustParse(DefaultCacheMaxSize)
	if c := p.Spec.ModelStorage.Cache; c != nil {
		if c.HostPath != "" {
			hostPath = c.HostPath
		}
		if c.MaxSize != nil {
			maxSize = *c.MaxSize
		}
		s3Secret = c.S3SecretName
	}
	return hostPath, maxSize, s3Secret
}

// withModelCache gives a step's pod its model from the cache: the cache's hostPath and an emptyDir for the link,
// the fetch as an init container (fetchImage, run as root to write the node's directory, with no capability and
// a read-only root), and the server reading both, read-only, with MODEL_PATH at the link.
func withModelCache(pod *corev1.PodSpec, p *inferencev1alpha1.Pipeline, s inferencev1alpha1.Step, fetchImage string) {
	hostPath, maxSize, s3Secret := cacheOf(p)
	pod.Volumes = []corev1.Volume{
		{Name: modelsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: cacheVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: hostPath, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
	}
	args := []string{modelfetch.Command, "--uri", s.Model, "--cache-dir", CacheMountPath, "--cache-max-size", maxSize.String(),
		"--link", ModelLink}
	mounts := []corev1.VolumeMount{{Name: cacheVolume, MountPath: CacheMountPath}, {Name: modelsVolume, MountPath: ModelsMountPath}}
	if s3Secret != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: s3SecretVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: s3Secret}}})
		args = append(args, "--s3-secret-dir", s3SecretPath)
		mounts = append(mounts, corev1.VolumeMount{Name: s3SecretVolume, MountPath: s3SecretPath, ReadOnly: true})
	}
	pod.InitContainers = []corev1.Container{{
		Name: FetchContainer, Image: fetchImage, Args: args, VolumeMounts: mounts,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}}
	server := &pod.Containers[0]
	server.VolumeMounts = []corev1.VolumeMount{
		{Name: modelsVolume, MountPath: ModelsMountPath, ReadOnly: true},
		{Name: cacheVolume, MountPath: CacheMountPath, ReadOnly: true},
	}
	for i := range server.Env {
		if server.Env[i].Name == EnvModelPath {
			server.Env[i].Value = ModelLink
		}
	}
}

// stepModel reads where a step's model came from: the fetch's result, which it leaves as its termination message,
// in the newest live pod of the step's current template. A failed fetch that is being retried shows its last
// failure. Nil when no pod has fetched yet.
func stepModel(pods []corev1.Pod) *inferencev1alpha1.StepModel {
	hash := currentTemplate(pods)
	var newest *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !alive(*p) || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp) ||
			newest.CreationTimestamp.Equal(&p.CreationTimestamp) && p.Name > newest.Name {
			newest = p
		}
	}
	if newest == nil {
		return nil
	}
	for _, cs := range newest.Status.InitContainerStatuses {
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
				Message: r.Message}
			if r.Size > 0 {
				m.Size = resource.NewQuantity(r.Size, resource.BinarySI)
			}
			return m
		}
	}
	return nil
}
