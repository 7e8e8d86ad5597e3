package sizer

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func podOwnedBy(kind, name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels,
		Annotations:     map[string]string{"big": "value"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}}}
}

func TestPodWorkload(t *testing.T) {
	for name, tc := range map[string]struct {
		pod        *metav1.PartialObjectMetadata
		kind, want string
		ok         bool
	}{
		"a Deployment's pod": {podOwnedBy("ReplicaSet", "web-7d9f8", map[string]string{"pod-template-hash": "7d9f8"}),
			"Deployment", "web", true},
		"a dashed Deployment name": {podOwnedBy("ReplicaSet", "my-web-app-5c6b", map[string]string{"pod-template-hash": "5c6b"}),
			"Deployment", "my-web-app", true},
		"a bare ReplicaSet's pod": {podOwnedBy("ReplicaSet", "web", map[string]string{"app": "web"}), "", "", false},
		"a StatefulSet's pod":     {podOwnedBy("StatefulSet", "db", nil), "StatefulSet", "db", true},
		"a Job's pod":             {podOwnedBy("Job", "batch", nil), "", "", false},
		"a bare pod":              {&metav1.PartialObjectMetadata{}, "", "", false},
	} {
		kind, got, ok := podWorkload(tc.pod)
		if kind != tc.kind || got != tc.want || ok != tc.ok {
			t.Errorf("%s: got (%q, %q, %v), want (%q, %q, %v)", name, kind, got, ok, tc.kind, tc.want, tc.ok)
		}
	}
}

func TestSlimPodKeepsWhatTheSizerReads(t *testing.T) {
	p := podOwnedBy("ReplicaSet", "web-1", map[string]string{"app": "web", "pod-template-hash": "1"})
	p.UID, p.ResourceVersion, p.DeletionTimestamp = "u", "7", &metav1.Time{}
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: "Other", Name: "x"})
	out, err := slimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*metav1.PartialObjectMetadata)
	if s.Name != "p" || s.Namespace != "ns" || s.UID != "u" || s.ResourceVersion != "7" || s.DeletionTimestamp == nil ||
		s.Labels["app"] != "web" {
		t.Fatalf("lost what the sizer reads: %+v", s.ObjectMeta)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != "web-1" {
		t.Fatalf("owners = %v, want only the controller", s.OwnerReferences)
	}
	if s.Annotations != nil || s.ManagedFields != nil {
		t.Fatalf("kept annotations or managed fields: %+v", s.ObjectMeta)
	}
	if kind, name, ok := podWorkload(s); !ok || kind != "Deployment" || name != "web" {
		t.Fatalf("a slimmed pod no longer maps to its Deployment: %s %s %v", kind, name, ok)
	}
}
