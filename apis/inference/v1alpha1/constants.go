package v1alpha1

// Well-known names of a Pipeline: the labels that select its steps' pods, and its finalizer.
const (
	// PipelineLabel and StepLabel select a step's pods (by name, which survives reordering the steps).
	PipelineLabel = "inference.keelson.dev/pipeline"
	StepLabel     = "inference.keelson.dev/step"
	// Finalizer orders the deletion of a pipeline's storage: steps first, then the claim, then the volume.
	Finalizer = "inference.keelson.dev/storage"
)
