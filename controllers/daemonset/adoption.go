package daemonset

import (
	"context"
	"fmt"
	"sync"

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

// adoptAndRelease carries out adoptionPlan and returns the pods the DaemonSet controls afterwards. Each change is a
// patch of the owner references guarded by the pod's resourceVersion, so a pod changed meanwhile (adopted by
// someone else, relabelled again) is left as it is for a pass moments later (retry), rather than overwritten.
func (r *Reconciler) adoptAndRelease(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, owned []*corev1.Pod) (
	pods []*corev1.Pod, retry bool, err error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{orphanIndex: ds.Name}); err != nil {
		return nil, false, fmt.Errorf("listing orphaned pods: %w", err)
	}
	orphans := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		orphans = append(orphans, &list.Items[i])
	}
	selector, err := metav1.LabelSelectorAsSelector(EffectiveSelector(ds))
	if err != nil {
		return nil, false, fmt.Errorf("spec.selector: %w", err)
	}
	adopt, release := adoptionPlan(selector, owned, orphans)
	if len(adopt) == 0 && len(release) == 0 {
		return owned, false, nil
	}
	logger := log.FromContext(ctx)
	released := map[*corev1.Pod]bool{}
	for _, pod := range release {
		done, err := r.patchOwners(ctx, pod, withoutOwner(pod.OwnerReferences, ds))
		if err != nil {
			return nil, false, fmt.Errorf("releasing pod %s: %w", pod.Name, err)
		}
		if !done {
			retry = true // still counted as the DaemonSet's, so its node gets no second pod meanwhile
			continue
		}
		logger.Info("Released pod that no longer matches the selector", "pod", pod.Name, "node", podNode(pod))
		released[pod] = true
	}
	out := make([]*corev1.Pod, 0, len(owned)+len(adopt))
	for _, pod := range owned {
		if !released[pod] {
			out = append(out, pod)
		}
	}
	if len(adopt) > 0 {
		// Adopt only for a DaemonSet that still exists as read and is not being deleted: the cache may lag a
		// deletion, and an adopted pod would then go with it.
		var fresh daemonsetv1alpha1.DaemonSet
		if err := r.liveReader().Get(ctx, client.ObjectKeyFromObject(ds), &fresh); err != nil {
			return nil, false, fmt.Errorf("checking the DaemonSet before adopting pods: %w", err)
		}
		if fresh.UID != ds.UID || fresh.DeletionTimestamp != nil {
			return out, retry, nil
		}
	}
	for _, pod := range adopt {
		refs := append(append([]metav1.OwnerReference(nil), pod.OwnerReferences...), ownerReference(ds))
		done, err := r.patchOwners(ctx, pod, refs)
		if err != nil {
			return nil, false, fmt.Errorf("adopting pod %s: %w", pod.Name, err)
		}
		if !done {
			retry = true
			continue
		}
		logger.Info("Adopted orphaned pod", "pod", pod.Name, "node", podNode(pod))
		out = append(out, pod)
	}
	return out, retry, nil
}

// patchOwners sets the pod's owner references, guarded by its resourceVersion, and reports whether it did. A pod
// gone or changed meanwhile is not an error (done is false): a later pass sees it as it is now.
func (r *Reconciler) patchOwners(ctx context.Context, pod *corev1.Pod, refs []metav1.OwnerReference) (done bool, err error) {
	base := pod.DeepCopy()
	pod.OwnerReferences = refs
	err = r.Patch(ctx, pod, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		*pod = *base
		return false, nil
	case err != nil:
		*pod = *base
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
		log.FromContext(ctx).Info("Released pod that no longer matches the selector", "pod", name, "node", podNode(&pod))
	}
	return retry, nil
}

// vanishedPods remembers, per DaemonSet key, the pods (name and UID) that left the cache without being seen
// terminating.
type vanishedPods struct {
	mu   sync.Mutex
	pods map[string]map[string]types.UID
}

func newVanishedPods() *vanishedPods { return &vanishedPods{pods: map[string]map[string]types.UID{}} }

func (v *vanishedPods) add(key, name string, uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pods[key] == nil {
		v.pods[key] = map[string]types.UID{}
	}
	v.pods[key][name] = uid
}

// take returns and forgets the pods recorded for key.
func (v *vanishedPods) take(key string) map[string]types.UID {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.pods[key]
	delete(v.pods, key)
	return out
}

func (v *vanishedPods) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.pods, key)
}
