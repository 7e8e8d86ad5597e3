package pipeline_test

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// valid is a Pipeline the webhook admits as it is: two steps on NFS storage.
func valid(name string) *inferencev1alpha1.Pipeline {
	return &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs", "share": "/m"}},
			Steps: []inferencev1alpha1.Step{{Name: "a", Image: "x"}, {Name: "b", Image: "y"}},
		}}
}

// cached makes a valid pipeline's storage the node-local cache, its models URIs.
func cached(p *inferencev1alpha1.Pipeline) {
	p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageCache}
	p.Spec.Steps[0].Model = "https://models.example/detect.tar.gz"
	p.Spec.Steps[1].Model = "http://10.0.0.5:8080/recognize.onnx#sha256=" + strings.Repeat("0f", 32)
}
