package daemonset

import (
	"bytes"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A revision's data is immutable, and the apiserver applies a strategic merge patch to its metadata (the garbage
// collector's, on an orphan delete) through unstructured form: the data must come out of that round trip byte for
// byte, or the patch is refused.
func TestRevisionDataSurvivesTheApiserversRoundTrip(t *testing.T) {
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "u"}}
	template := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"z": "1", "a": "2"}, Annotations: map[string]string{"x": "<&>"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64(30)),
			Containers: []corev1.Container{{Name: "app", Image: "agent:v1",
				Ports:     []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
		},
	}
	rev := newRevision(ds, template, "h", 3)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rev)
	if err != nil {
		t.Fatal(err)
	}
	var back appsv1.ControllerRevision
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Data.Raw, rev.Data.Raw) {
		t.Fatalf("the data changed in the round trip:\nwrote %s\nread  %s", rev.Data.Raw, back.Data.Raw)
	}
	got, err := templateOfRevision(&back)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Containers[0].Image != "agent:v1" || got.Annotations["x"] != "<&>" {
		t.Fatalf("the template read back is not the one written: %+v", got)
	}
}
