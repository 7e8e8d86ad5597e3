// Package v1alpha1 holds the sizer.keelson.dev/v1alpha1 API group: the WorkloadSizer, which keeps a Deployment or StatefulSet at its declared size.
//
// +kubebuilder:object:generate=true
// +groupName=sizer.keelson.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version every kind in this package is registered under.
	GroupVersion = schema.GroupVersion{Group: "sizer.keelson.dev", Version: "v1alpha1"}

	// SchemeBuilder collects the kinds of this group-version so they can be added to a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds every kind of this group-version to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
