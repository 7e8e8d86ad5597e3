package pipeline

import (
	"crypto/sha256"
	"encoding/hex"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// The model cache on local PersistentVolumes (modelStorage.cache.localVolume): one claim per pipeline and node.
const (
	// CacheClaimLabel marks a claim of the model cache, so that the controller finds the ones no step needs.
	CacheClaimLabel = "inference.keelson.dev/model-cache"
	// CacheNodeLabel is the node (kubernetes.io/hostname) whose steps a cache claim serves.
	CacheNodeLabel = "inference.keelson.dev/node"
)

// localCache is the pipeline's cache on local volumes, or nil when the cache is the nodes' directory.
func localCache(p *inferencev1alpha1.Pipeline) *inferencev1alpha1.LocalCacheVolume {
	if c := p.Spec.ModelStorage.Cache; c != nil {
		return c.LocalVolume
	}
	return nil
}

// localCacheSize is the size of each cache claim, and the cache's bound on it.
func localCacheSize(v *inferencev1alpha1.LocalCacheVolume) resource.Quantity {
	if v.Size != nil && v.Size.Sign() > 0 {
		return *v.Size
	}
	return resource.MustParse(DefaultCacheMaxSize)
}

// localCacheBound is the cache's bound on a claim (or a pod's volume) of size: a third of it, less 5% for the
// filesystem's own use (in whole MiB), so that a model as large as the bound is downloaded as an archive and
// unpacked beside the models the cache keeps, on a volume that holds no more than its size.
func localCacheBound(v *inferencev1alpha1.LocalCacheVolume) resource.Quantity {
	size := localCacheSize(v)
	b := size.Value() / 100 * 95 / 3
	if b >= 1<<20 {
		b = b >> 20 << 20
	}
	return *resource.NewQuantity(max(b, 1), resource.BinarySI)
}

// CacheClaimName names the cache claim of a pipeline's steps on one node: the pipeline's name and a hash of the
// node, the class and the size. Node names need not make claim names (a hostname label may hold capitals and
// underscores), and a new class or size is a new claim: a bound claim's class cannot change, nor can most volumes
// shrink.
func CacheClaimName(p *inferencev1alpha1.Pipeline, node string) string {
	v := localCache(p)
	size := localCacheSize(v)
	sum := sha256.Sum256([]byte(node + "\x00" + v.StorageClassName + "\x00" + size.String()))
	return p.Name + "-model-cache-" + hex.EncodeToString(sum[:5])
}

// DesiredCacheClaims are the cache claims of p (localVolume): one per node that a step fetching its model is pinned
// to, with the steps each serves, in step order. A step without a location has none (its pod fetches into a volume
// of its own).
func DesiredCacheClaims(p *inferencev1alpha1.Pipeline) ([]*corev1.PersistentVolumeClaim, map[string][]string) {
	v := localCache(p)
	if v == nil {
		return nil, nil
	}
	var claims []*corev1.PersistentVolumeClaim
	steps := map[string][]string{}
	for i, s := range p.Spec.Steps {
		if pipelinespec.SourceOf(s.Model) != pipelinespec.ModelFetched || s.Location == "" {
			continue
		}
		name := CacheClaimName(p, s.Location)
		if _, seen := steps[name]; !seen {
			l := pipelineLabels(p)
			l[CacheClaimLabel] = "true"
			l[CacheNodeLabel] = s.Location
			claims = append(claims, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: l,
					OwnerReferences: []metav1.OwnerReference{ownerRef(p)}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(v.StorageClassName),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: localCacheSize(v)}},
				},
			})
		}
		steps[name] = append(steps[name], pipelinespec.StepName(p.Spec.Steps, i))
	}
	return claims, steps
}

// claimsNamedBy are the claims a Deployment's pods mount.
func claimsNamedBy(d *appsv1.Deployment) []string {
	var out []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}
