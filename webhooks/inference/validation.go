package inference

import (
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// Default names every step (step-<index>), sets its port (args.listenPort, else 8080), its replicas and its
// strategy (Recreate for a single-replica GPU step), and the storage defaults, so the stored object says what the
// controller will run.
func Default(p *inferencev1alpha1.Pipeline) {
	ms := &p.Spec.ModelStorage
	if ms.Type == inferencev1alpha1.StorageNFS {
		if ms.Driver == "" {
			ms.Driver = pipeline.DefaultDriver
		}
		if ms.CSI == nil {
			ms.CSI = ptr.To(true)
		}
		if ms.ReadOnly == nil {
			ms.ReadOnly = ptr.To(true)
		}
	}
	for i := range p.Spec.Steps {
		s := &p.Spec.Steps[i]
		if s.Name == "" {
			s.Name = "step-" + strconv.Itoa(i)
		}
		if s.Port == 0 {
			s.Port = pipeline.StepPort(*s)
		}
		if s.Replicas == nil {
			s.Replicas = ptr.To[int32](1)
		}
		if s.Strategy == "" {
			s.Strategy = pipeline.StepStrategy(*s)
		}
	}
}

// Validate returns every problem of a pipeline's spec with its field path.
func Validate(p *inferencev1alpha1.Pipeline) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	ms := p.Spec.ModelStorage
	mp := sp.Child("modelStorage")
	switch ms.Type {
	case inferencev1alpha1.StorageNFS:
		for _, k := range []string{"server", "share"} {
			if ms.CSIParameter[k] == "" {
				errs = append(errs, field.Required(mp.Child("csiParameter").Key(k), "type nfs needs the share's server and path"))
			}
		}
	case inferencev1alpha1.StoragePVC:
		if ms.ClaimName == "" {
			errs = append(errs, field.Required(mp.Child("claimName"), "type pvc needs an existing claim"))
		}
	default:
		errs = append(errs, field.NotSupported(mp.Child("type"), ms.Type, []string{"nfs", "pvc"}))
	}
	if len(p.Spec.Steps) == 0 {
		errs = append(errs, field.Required(sp.Child("steps"), "a pipeline needs at least one step"))
	}
	for i, s := range p.Spec.Steps {
		stp := sp.Child("steps").Index(i)
		name := pipeline.StepName(p.Spec.Steps, i)
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(stp.Child("name"), name, msg))
		}
		if len(p.Name)+1+len(name) > 63 {
			errs = append(errs, field.TooLong(stp.Child("name"), name, 63-len(p.Name)-1))
		}
		if s.Image == "" {
			errs = append(errs, field.Required(stp.Child("image"), ""))
		}
		if v, ok := s.Args["listenPort"]; ok {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
				errs = append(errs, field.Invalid(stp.Child("args").Key("listenPort"), v, "must be a port number"))
			}
		}
	}
	_, wiringErrs := pipeline.Wire(p.Spec.Steps)
	return append(errs, wiringErrs...)
}

// ValidateUpdate checks what may not change: the model storage.
func ValidateUpdate(old, p *inferencev1alpha1.Pipeline) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(old.Spec.ModelStorage, p.Spec.ModelStorage) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "modelStorage"), "",
			"spec.modelStorage is immutable: create a new pipeline to move its models")}
	}
	return nil
}
