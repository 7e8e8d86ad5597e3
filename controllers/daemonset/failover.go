package daemonset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// seedExpectations closes the failover window. A newly elected leader starts with a warm cache (so handover is
// fast) and empty expectations, and the cache may not yet show the pods the old leader created or deleted moments
// ago: planning from it would put a second pod on such a node. So the first pass over a DaemonSet in this process
// reads its pods live, past the cache, and expects what the cache has not seen yet: a creation for each live pod
// missing from the cache, a deletion for each cached pod that is gone or being deleted, an update for each cached
// pod whose live revision differs (updated in place). Until the cache has caught
// up, the expectations hold the pass back, as they do after this process's own writes. Later passes need no live
// read: everything this process writes is in its own expectations.
func (r *Reconciler) seedExpectations(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string) error {
	if r.seeded.has(key, ds.UID) {
		return nil
	}
	// A first pass for this UID: whatever is remembered under the name (expectations, back-off, pacing) belongs to
	// an earlier DaemonSet of that name, deleted and created again faster than this process saw it go. Its
	// expected creations may never be seen (their owner is gone) and would hold this one back until they expire.
	r.forget(key)
	var live corev1.PodList
	if err := r.liveReader().List(ctx, &live, client.InNamespace(ds.Namespace), client.MatchingLabels{daemonsetv1alpha1.NameLabel: ds.Name}); err != nil {
		return fmt.Errorf("reading pods past the cache: %w", err)
	}
	// The cache is read after the live list, so that a pod missing from it has its event still to come.
	cached, err := r.ownedPods(ctx, ds)
	if err != nil {
		return err
	}
	lag := cacheLag(ds.UID, live.Items, cached)
	// Expected before the second look, so that a creation event landing meanwhile counts against them.
	r.expectations.ExpectCreations(key, len(lag.uncached))
	if err := r.forgetTheGone(ctx, ds, key, lag.uncached); err != nil {
		return err
	}
	r.expectations.ExpectDeletions(key, lag.deletions...)
	for uid, revision := range lag.updates {
		r.expectations.ExpectUpdate(key, uid, revision)
	}
	r.seeded.add(key, ds.UID)
	return nil
}

// forgetTheGone settles the expected creation of each pod of uncached that a second live list, after the cache
// read, no longer shows. A pod live before the cache read and missing from it is either one whose creation the
// cache has yet to see, or one deleted in between whose deletion the cache has already seen; only the first kind's
// creation event is still to come. Expecting one for the second kind would hold every pass back until the
// expectations expire. One list, not a read per pod: the window in which events land stays short.
func (r *Reconciler) forgetTheGone(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, uncached map[types.UID]string) error {
	if len(uncached) == 0 {
		return nil
	}
	var again corev1.PodList
	if err := r.liveReader().List(ctx, &again, client.InNamespace(ds.Namespace), client.MatchingLabels{daemonsetv1alpha1.NameLabel: ds.Name}); err != nil {
		r.expectations.Forget(key) // the pass fails and seeds again: nothing half-set may stay
		return fmt.Errorf("reading pods past the cache: %w", err)
	}
	there := map[types.UID]bool{}
	for _, p := range again.Items {
		there[p.UID] = true
	}
	for uid := range uncached {
		if !there[uid] {
			r.expectations.CreationObserved(key)
		}
	}
	return nil
}

// lag is what the cache has yet to see of the DaemonSet's pods.
type lag struct {
	// uncached are the live pods missing from the cache (name by UID): creations it has yet to see, or pods gone
	// since the live list (forgetTheGone tells which).
	uncached map[types.UID]string
	// deletions are the cached pods it has yet to see deleted (gone from the live list, or being deleted there).
	deletions []types.UID
	// updates are the cached pods whose live revision label differs, with that label: updated in place.
	updates map[types.UID]string
}

// cacheLag compares a live list of pods with the cached pods the DaemonSet owner controls.
func cacheLag(owner types.UID, live []corev1.Pod, cached []*corev1.Pod) lag {
	out := lag{updates: map[types.UID]string{}, uncached: map[types.UID]string{}}
	liveByUID := map[types.UID]*corev1.Pod{}
	for i := range live {
		pod := &live[i]
		if controllerUID(pod) == string(owner) {
			liveByUID[pod.UID] = pod
		}
	}
	cachedUIDs := map[types.UID]bool{}
	for _, pod := range cached {
		cachedUIDs[pod.UID] = true
		if pod.DeletionTimestamp != nil {
			continue // its deletion is already seen
		}
		l, ok := liveByUID[pod.UID]
		switch {
		case !ok || l.DeletionTimestamp != nil:
			out.deletions = append(out.deletions, pod.UID)
		case l.Labels[RevisionLabel] != pod.Labels[RevisionLabel]:
			out.updates[pod.UID] = l.Labels[RevisionLabel]
		}
	}
	for uid, pod := range liveByUID {
		if !cachedUIDs[uid] {
			out.uncached[uid] = pod.Name
		}
	}
	return out
}
