package sizer

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// controlledElsewhere returns the conflict of a sizer whose target (of kind) another controller controls, or nil. A target the
// sizer created is its own (created); one without a controller owner reference (created by hand, by Helm, by a
// GitOps tool) is the user's, and the sizer may size it. An owner reference without controller=true (OLM's, say) does not
// count: such an owner that writes the spec back shows as a field conflict instead.
func controlledElsewhere(t *target, kind string) *conflict {
	if t.created {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(t.obj)
	if ref == nil || ref.Kind == "WorkloadSizer" && strings.HasPrefix(ref.APIVersion, sizerv1alpha1.GroupVersion.Group+"/") {
		return nil // another sizer's creation: which one sizes it is the one-sizer-per-workload rule's to say
	}
	return &conflict{reason: sizerv1alpha1.ReasonTargetControlled, message: fmt.Sprintf(
		"%s %s is controlled by %s %s (%s), which writes its spec: the sizer writes nothing to it; size it through %s %s "+
			"instead, or point the sizer at a workload of your own", kind, t.obj.GetName(), ref.Kind, ref.Name, ref.APIVersion,
		ref.Kind, ref.Name)}
}
