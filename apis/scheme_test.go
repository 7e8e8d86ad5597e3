package apis_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// Each group-version registers under its own group, so a binary that adds it to its scheme can decode its kinds.
func TestGroupVersionsRegister(t *testing.T) {
	for group, gv := range map[string]struct {
		gv  schema.GroupVersion
		add func(*runtime.Scheme) error
	}{
		"daemonset.keelson.dev": {daemonsetv1alpha1.GroupVersion, daemonsetv1alpha1.AddToScheme},
		"sizer.keelson.dev":     {sizerv1alpha1.GroupVersion, sizerv1alpha1.AddToScheme},
		"inference.keelson.dev": {inferencev1alpha1.GroupVersion, inferencev1alpha1.AddToScheme},
	} {
		if gv.gv.Group != group || gv.gv.Version != "v1alpha1" {
			t.Errorf("GroupVersion = %s, want %s/v1alpha1", gv.gv, group)
		}
		s := runtime.NewScheme()
		if err := gv.add(s); err != nil {
			t.Fatalf("%s AddToScheme: %v", group, err)
		}
		if !s.IsVersionRegistered(gv.gv) {
			t.Errorf("%s is not registered after AddToScheme", gv.gv)
		}
	}
}
