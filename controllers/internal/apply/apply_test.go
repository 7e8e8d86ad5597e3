package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHashAndNeeded(t *testing.T) {
	desired := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	h, err := Hash(desired)
	if err != nil || h == "" {
		t.Fatalf("Hash: %q, %v", h, err)
	}

	// Status and the hash annotation itself do not change the hash.
	withStatus := desired.DeepCopy()
	withStatus.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
	withStatus.Annotations = map[string]string{HashAnnotation: "anything"}
	if h2, _ := Hash(withStatus); h2 != h {
		t.Fatalf("status or the hash annotation changed the hash: %s != %s", h2, h)
	}
	changed := desired.DeepCopy()
	changed.Spec.Ports[0].Port = 81
	if h3, _ := Hash(changed); h3 == h {
		t.Fatal("a spec change did not change the hash")
	}

	if needed, _ := Needed(nil, desired); !needed {
		t.Fatal("a missing object must be applied")
	}
	existing := desired.DeepCopy()
	existing.Annotations = map[string]string{HashAnnotation: h}
	if needed, _ := Needed(existing, desired); needed {
		t.Fatal("an object last applied with the same hash must not be applied again")
	}
	if needed, _ := Needed(existing, changed); !needed {
		t.Fatal("a changed desired object must be applied")
	}
}
