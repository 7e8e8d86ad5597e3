package pipeline

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// localVolumeClass checks the class of the cache's local volumes, when the pipeline names one that old did not
// (old is nil on creation): a class that binds Immediate binds each claim to a volume on any node, not on its step's,
// and the step's pods, pinned to their node, could never start; such a class is refused. A class that does not
// exist yet is admitted with a warning (the claims wait for it); one that cannot be read is not checked.
func localVolumeClass(ctx context.Context, r client.Reader, old, p *inferencev1alpha1.Pipeline) (field.ErrorList, []string) {
	name := localVolumeClassName(p)
	if r == nil || name == "" || (old != nil && localVolumeClassName(old) == name) {
		return nil, nil
	}
	fp := field.NewPath("spec", "modelStorage", "cache", "localVolume", "storageClassName")
	var class storagev1.StorageClass
	switch err := r.Get(ctx, client.ObjectKey{Name: name}, &class); {
	case apierrors.IsNotFound(err):
		return nil, []string{fmt.Sprintf("%s: no StorageClass %s (yet); the cache claims wait for it", fp, name)}
	case err != nil:
		return nil, []string{fmt.Sprintf("%s: the StorageClass could not be checked: %v", fp, err)}
	}
	if mode := class.VolumeBindingMode; mode == nil || *mode != storagev1.VolumeBindingWaitForFirstConsumer {
		return field.ErrorList{field.Invalid(fp, name, "binds Immediate: each cache claim would bind to a volume on any "+
			"node, not on its step's; use a class with volumeBindingMode WaitForFirstConsumer")}, nil
	}
	return nil, nil
}

// localVolumeClassName is the class of p's cache volumes, or "".
func localVolumeClassName(p *inferencev1alpha1.Pipeline) string {
	if c := p.Spec.ModelStorage.Cache; c != nil && c.LocalVolume != nil {
		return c.LocalVolume.StorageClassName
	}
	return ""
}
