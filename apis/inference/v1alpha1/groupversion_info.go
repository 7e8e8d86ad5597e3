// Package v1alpha1 holds the inference.keelson.dev/v1alpha1 API group: the Pipeline, a multi-step model-inference pipeline.
//
// +kubebuilder:object:generate=true
// +groupName=inference.keelson.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version every kind in this package is registered under.
	GroupVersion = schema.GroupVersion{Group: "inference.keelson.dev", Version: "v1alpha1"}

	// SchemeBuilder collects the kinds of this group-version so they can be added to a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds every kind of this group-version to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds of this group-version; each *_types.go file appends its object and list kinds in an
	// init function.
	knownTypes []runtime.Object
)

// addKnownTypes adds this group-version's kinds and the meta types every group-version carries.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
