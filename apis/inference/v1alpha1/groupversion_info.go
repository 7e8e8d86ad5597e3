// Package v1alpha1 holds the inference.keelson.dev/v1alpha1 API group: the Pipeline, a multi-step model-inference pipeline.
//
// +kubebuilder:object:generate=true
// +groupName=inference.keelson.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version every kind in this package is registered under.
	GroupVersion = schema.GroupVersion{Group: "inference.keelson.dev", Version: "v1alpha1"}

	// SchemeBuilder collects the kinds of this group-version so they can be added to a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds every kind of this group-version to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
