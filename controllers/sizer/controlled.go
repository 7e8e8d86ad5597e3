package sizer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonTargetControlled means that the workload is controlled by another controller (its controller owner reference
// names, say, a Pipeline whose step it is), which writes its spec: sizing it would undo that controller's writes and
// have them undone in turn, rolling its pods on every round. The sizer writes nothing to it.
const ReasonTargetControlled = "TargetControlled"

// controlledElsewhere returns the conflict of a sizer whose target (of kind) another controller controls, or nil. A target the
// sizer created is its own (created); one without a controller owner reference (created by hand, by Helm, by a
// GitOps tool) is the user's, and the sizer may size it.
func controlledElsewhere(t *target, kind string) *conflict {
	if t.created {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(t.obj)
	if ref == nil {
		return nil
	}
	return &conflict{reason: ReasonTargetControlled, message: fmt.Sprintf(
		"%s %s is controlled by %s %s (%s), which writes its spec: the sizer writes nothing to it; size it through %s %s "+
			"instead, or point the sizer at a workload of your own", kind, t.obj.GetName(), ref.Kind, ref.Name, ref.APIVersion,
		ref.Kind, ref.Name)}
}
