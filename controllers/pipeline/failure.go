package pipeline

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// storageKey is the key of the storage's failure in the failures of a pass (step names are never empty).
const storageKey = ""

// failure is why a step's objects (or the storage) could not be written as the spec says.
type failure struct {
	reason, message string
}

// refused reports whether the apiserver refused a write for what it says (the object is invalid, forbidden, too
// large, or its fields are another manager's), which no retry of the same write fixes: that is the step's failure
// (ApplyFailed). Any other error (a timeout, throttling, an unavailable apiserver) is retried, and the step keeps
// the status it had.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsConflict(err) && apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict)
}

// writeFailed is the outcome of a failed write: a failure with reason ApplyFailed when the apiserver refused it,
// else none (the write is retried); the error is returned either way.
func writeFailed(err error) (*failure, error) {
	if refused(err) {
		return &failure{inferencev1alpha1.ReasonApplyFailed, err.Error()}, err
	}
	return nil, err
}

// nameTakenFailure says that desired's name is taken by an object that is not the pipeline's.
func nameTakenFailure(desired client.Object) *failure {
	if desired.GetLabels()[CacheClaimLabel] != "" {
		return &failure{inferencev1alpha1.ReasonNameTaken, fmt.Sprintf("PersistentVolumeClaim %s, the model cache's claim on node %s, already "+
			"exists and is not this pipeline's: remove that claim, or rename the pipeline", desired.GetName(), desired.GetLabels()[CacheNodeLabel])}
	}
	return &failure{inferencev1alpha1.ReasonNameTaken, fmt.Sprintf("%s %s already exists and is not this pipeline's: rename the step (or the pipeline), or remove that %s",
		kindOf(desired), desired.GetName(), kindOf(desired))}
}

// nameTaken reports whether a child's name is taken by an object that is not the pipeline's.
func nameTaken(failures map[string]failure) bool {
	for _, f := range failures {
		if f.reason == inferencev1alpha1.ReasonNameTaken {
			return true
		}
	}
	return false
}
