package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// adoptionPlan decides, as kube-controller-manager's ControllerRefManager does, which pods change hands: orphans
// (no controller) that match the selector are adopted, so a DaemonSet re-created after `kubectl delete
// --cascade=orphan` takes its pods back instead of running a second pod beside each; controlled pods that no longer
// match the selector are released (a user relabelled one to take it out of service, say), and their node gets a new
// pod. Pods being deleted change hands in neither direction: they are going anyway. The orphans given here carry
// the DaemonSet's name label: a pod without it was not made by Keelson and stays the user's.
func adoptionPlan(selector labels.Selector, owned, orphans []*corev1.Pod) (adopt, release []*corev1.Pod) {
	for _, pod := range owned {
		if pod.DeletionTimestamp == nil && !selector.Matches(labels.Set(pod.Labels)) {
			release = append(release, pod)
		}
	}
	for _, pod := range orphans {
		if pod.DeletionTimestamp == nil && metav1.GetControllerOf(pod) == nil && selector.Matches(labels.Set(pod.Labels)) {
			adopt = append(adopt, pod)
		}
	}
	return adopt, release
}

// handover is what adoptAndRelease leaves for the pass.
type handover struct {
	// pods are the pods the DaemonSet controls afterwards.
	pods []*corev1.Pod
	// occupied counts, per node, the orphans whose adoption did not go through this time: the node is not empty,
	// and gets no pod of the DaemonSet beside the orphan while it waits for a later pass.
	occupied map[string]int
	// retry asks for a pass moments later (a patch met a conflict).
	retry bool
	// stop ends the pass before planning: the DaemonSet read live is gone or being deleted, and the cache lags.
	stop bool
}

// adoptAndRelease carries out adoptionPlan. Each change is a patch of the owner references guarded by the pod's
// resourceVersion, so a pod changed meanwhile (adopted by someone else, relabelled again) is left as it is for a
// pass moments later (retry), rather than overwritten; a pod not released stays the DaemonSet's, an orphan not
// adopted still occupies its node.
func (r *Reconciler) adoptAndRelease(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, owned []*corev1.Pod) (handover, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{orphanIndex: ds.Name}); err != nil {
		return handover{}, fmt.Errorf("listing orphaned pods: %w", err)
	}
	orphans := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		orphans = append(orphans, &list.Items[i])
	}
	selector, err := metav1.LabelSelectorAsSelector(EffectiveSelector(ds))
	if err != nil {
		return handover{}, fmt.Errorf("spec.selector: %w", err)
	}
	adopt, release := adoptionPlan(selector, owned, orphans)
	if len(adopt) == 0 && len(release) == 0 {
		return handover{pods: owned}, nil
	}
	logger := log.FromContext(ctx)
	h := handover{occupied: map[string]int{}}
	released := map[*corev1.Pod]bool{}
	for _, cached := range release {
		pod := cached.DeepCopy() // the cache's own object (ownedPods): the patch writes its answer into pod
		done, err := r.patchOwners(ctx, pod, withoutOwner(pod.OwnerReferences, ds))
		if err != nil {
			return handover{}, fmt.Errorf("releasing pod %s: %w", pod.Name, err)
		}
		if !done {
			h.retry = true // still counted as the DaemonSet's, so its node gets no second pod meanwhile
			continue
		}
		logger.Info("Released pod that no longer matches the selector", "pod", pod.Name, "node", PodNode(pod))
		released[cached] = true
	}
	h.pods = make([]*corev1.Pod, 0, len(owned)+len(adopt))
	for _, pod := range owned {
		if !released[pod] {
			h.pods = append(h.pods, pod)
		}
	}
	if len(adopt) > 0 {
		// Adopt only for a DaemonSet that still exists as read and is not being deleted: the cache may lag a
		// deletion, and an adopted pod would then go with it. Nor plan for it: its orphans' nodes would look empty.
		live, err := r.liveAndStaying(ctx, ds)
		if err != nil {
			return handover{}, fmt.Errorf("checking the DaemonSet before adopting pods: %w", err)
		}
		if !live {
			return handover{stop: true}, nil
		}
	}
	for _, pod := range adopt {
		refs := append(append([]metav1.OwnerReference(nil), pod.OwnerReferences...), ownerReference(ds))
		done, err := r.patchOwners(ctx, pod, refs)
		if err != nil {
			return handover{}, fmt.Errorf("adopting pod %s: %w", pod.Name, err)
		}
		if !done {
			h.retry = true
			h.occupied[PodNode(pod)]++ // the orphan still runs there: no second pod beside it
			continue
		}
		logger.Info("Adopted orphaned pod", "pod", pod.Name, "node", PodNode(pod))
		h.pods = append(h.pods, pod)
	}
	return h, nil
}

// patchOwners sets obj's owner references (a pod's, a revision's), guarded by its resourceVersion, and reports
// whether it did. An object gone or changed meanwhile is not an error (done is false): a later pass sees it as it
// is now.
func (r *Reconciler) patchOwners(ctx context.Context, obj client.Object, refs []metav1.OwnerReference) (done bool, err error) {
	before := obj.GetOwnerReferences()
	base := obj.DeepCopyObject().(client.Object)
	obj.SetOwnerReferences(refs)
	err = r.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		obj.SetOwnerReferences(before)
		return false, nil
	case err != nil:
		obj.SetOwnerReferences(before)
		return false, err
	}
	return true, nil
}

// withoutOwner drops ds from the owner references.
func withoutOwner(refs []metav1.OwnerReference, ds *daemonsetv1alpha1.DaemonSet) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, ref := range refs {
		if ref.UID != ds.UID {
			out = append(out, ref)
		}
	}
	return out
}

// releaseVanished looks up, past the cache, the pods of ds that left the cache without being seen terminating, and
// releases those that still exist under the DaemonSet's control but no longer match its selector (relabelled
// without the name label, which the cache selects on). Those deleted for real are forgotten.
func (r *Reconciler) releaseVanished(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string) (retry bool, err error) {
	selector, err := metav1.LabelSelectorAsSelector(EffectiveSelector(ds))
	if err != nil {
		return false, fmt.Errorf("spec.selector: %w", err)
	}
	for name, uid := range r.vanished.take(key) {
		var pod corev1.Pod
		err := r.liveReader().Get(ctx, types.NamespacedName{Namespace: ds.Namespace, Name: name}, &pod)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			r.vanished.add(key, name, uid)
			return false, fmt.Errorf("looking up pod %s: %w", name, err)
		}
		if pod.UID != uid || controllerUID(&pod) != string(ds.UID) || pod.DeletionTimestamp != nil ||
			selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		done, err := r.patchOwners(ctx, &pod, withoutOwner(pod.OwnerReferences, ds))
		if err != nil {
			r.vanished.add(key, name, uid)
			return false, fmt.Errorf("releasing pod %s: %w", name, err)
		}
		if !done {
			r.vanished.add(key, name, uid)
			retry = true
			continue
		}
		log.FromContext(ctx).Info("Released pod that no longer matches the selector", "pod", name, "node", PodNode(&pod))
	}
	return retry, nil
}

// liveAndStaying reads ds past the cache: whether it still exists, as the same object, and is not being deleted.
func (r *Reconciler) liveAndStaying(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) (bool, error) {
	var fresh daemonsetv1alpha1.DaemonSet
	err := r.liveReader().Get(ctx, client.ObjectKeyFromObject(ds), &fresh)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the DaemonSet live: %w", err)
	}
	return fresh.UID == ds.UID && fresh.DeletionTimestamp == nil, nil
}
