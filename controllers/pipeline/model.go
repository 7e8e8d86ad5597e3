package pipeline

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// mountsStorage reports whether a step of p mounts the pipeline's own storage (a path model with nfs or pvc).
func mountsStorage(p *inferencev1alpha1.Pipeline) bool {
	if p.Spec.ModelStorage.Type == inferencev1alpha1.StorageCache {
		return false
	}
	for _, s := range p.Spec.Steps {
		if pipelinespec.SourceOf(s.Model) == pipelinespec.ModelOnStorage {
			return true
		}
	}
	return false
}

// storageModels says which steps of a pipeline of storage cache have a model that is a path (or none): there is
// no storage for it to be on. Admission refuses them; this catches one admitted while the webhook was down.
func storageModels(p *inferencev1alpha1.Pipeline) field.ErrorList {
	if p.Spec.ModelStorage.Type != inferencev1alpha1.StorageCache {
		return nil
	}
	var errs field.ErrorList
	for i, s := range p.Spec.Steps {
		if pipelinespec.SourceOf(s.Model) == pipelinespec.ModelOnStorage {
			errs = append(errs, field.Invalid(field.NewPath("spec", "steps").Index(i).Child("model"), s.Model,
				"with storage cache a step's model is a URI (http(s)://, s3:// or pvc://): there is no share to hold a path"))
		}
	}
	return errs
}

// ModelsMountPath is where each step finds its model.
const ModelsMountPath = "/models"

const modelsVolume = "models"

// ClaimName is the claim the steps mount: the user's (type pvc) or the one the controller creates.
func ClaimName(p *inferencev1alpha1.Pipeline) string {
	if p.Spec.ModelStorage.Type == inferencev1alpha1.StoragePVC {
		return p.Spec.ModelStorage.ClaimName
	}
	return p.Name + "-models"
}
