package daemonset

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// ownerIndex indexes pods and revisions by the UID of the Keelson DaemonSet that controls them.
const ownerIndex = "daemonset.keelson.dev/owner-uid"

// orphanIndex indexes pods and revisions that carry the DaemonSet name label and have no controller, by that name: the orphans a
// DaemonSet may adopt, found without scanning its namespace's pods on every pass.
const orphanIndex = "daemonset.keelson.dev/orphan-of"

// controllerUID returns the UID of obj's controlling Keelson DaemonSet, or "".
func controllerUID(obj client.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != daemonsetv1alpha1.GroupVersion.String() {
		return ""
	}
	return string(ref.UID)
}

// orphanOf returns the DaemonSet name an orphaned pod is labelled with, for orphanIndex.
func orphanOf(obj client.Object) []string {
	if name := obj.GetLabels()[daemonsetv1alpha1.NameLabel]; name != "" && metav1.GetControllerOf(obj) == nil {
		return []string{name}
	}
	return nil
}

// ownerOf returns the UID of obj's controlling Keelson DaemonSet, for ownerIndex.
func ownerOf(obj client.Object) []string {
	if uid := controllerUID(obj); uid != "" {
		return []string{uid}
	}
	return nil
}

// podOwnerIndex indexes the pod informer's objects by the UID of their controlling Keelson DaemonSet (ownerOf).
const podOwnerIndex = "daemonset.keelson.dev/pod-owner"
