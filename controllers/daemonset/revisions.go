package daemonset

import (
	"context"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// revisions is what the controller knows of a DaemonSet's history after syncing it.
type revisions struct {
	// updateHash is the current template's revision; currentHash the one the rollout started from.
	updateHash, currentHash string
	// templates holds every recorded template by hash, so a pod can be recreated at an older revision.
	templates map[string]*corev1.PodTemplateSpec
	// collisionCount is the (possibly bumped) count to write to status.
	collisionCount *int32
	// readLive are revisions the cache did not show that syncRevisions read past it (a name taken by a revision of
	// this DaemonSet not cached yet, or by an orphan it adopted): the pass must see them as the others, a failure
	// recorded on one included.
	readLive []appsv1.ControllerRevision
}

// maxCollisions bounds the hash-collision loop; a real collision is already astronomically rare.
const maxCollisions = 10

// syncRevisions makes sure a ControllerRevision records template and is the newest, reusing the revision of an
// identical older template (so rolling back to it reuses its pods' hash), and returns the history.
func (r *Reconciler) syncRevisions(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec,
	revs []appsv1.ControllerRevision, pods []*corev1.Pod) (revisions, error) {
	out := revisions{templates: map[string]*corev1.PodTemplateSpec{}}
	byName := map[string]*appsv1.ControllerRevision{}
	numbers := map[string]int64{}
	var maxNumber int64
	for i := range revs {
		rev := &revs[i]
		byName[rev.Name] = rev
		maxNumber = max(maxNumber, rev.Revision)
		if t, err := templateOfRevision(rev); err == nil {
			out.templates[rev.Labels[RevisionLabel]] = t
			numbers[rev.Labels[RevisionLabel]] = rev.Revision
		}
	}

	collisions := ptr.Deref(ds.Status.CollisionCount, 0)
	for range maxCollisions {
		hash := revisionHash(template, &collisions)
		existing, found := byName[revisionName(ds, hash)]
		if !found {
			rev := newRevision(ds, template, hash, maxNumber+1)
			live, taken, err := r.createRevision(ctx, ds, rev, template)
			if err != nil {
				return out, err
			}
			if taken {
				collisions++ // the name holds another template, or another owner's revision
				continue
			}
			if live != nil {
				out.readLive = append(out.readLive, *live)
				numbers[hash] = live.Revision
			}
			out.updateHash = hash
			break
		}
		recorded, err := templateOfRevision(existing)
		if err != nil || !equality.Semantic.DeepEqual(recorded, template) {
			collisions++ // same name, other template: salt the hash and try again
			continue
		}
		if existing.Revision < maxNumber {
			// An old template is back: renumber its revision as the newest.
			patch := client.MergeFrom(existing.DeepCopy())
			existing.Revision = maxNumber + 1
			if err := r.Patch(ctx, existing, patch); err != nil {
				return out, fmt.Errorf("renumbering revision %s: %w", existing.Name, err)
			}
		}
		out.updateHash = hash
		break
	}
	if out.updateHash == "" {
		return out, fmt.Errorf("no free revision name after %d hash collisions", maxCollisions)
	}
	out.templates[out.updateHash] = template
	if collisions > 0 {
		out.collisionCount = &collisions
	}
	out.currentHash = currentRevisionHash(pods, numbers, out.updateHash)
	return out, nil
}

// currentRevisionHash is the revision the rollout started from: the newest recorded revision, other than the update
// revision, that pods still run. With no such pods the rollout is done and it is the update revision.
func currentRevisionHash(pods []*corev1.Pod, numbers map[string]int64, updateHash string) string {
	current, best := updateHash, int64(-1)
	for _, pod := range pods {
		h := pod.Labels[RevisionLabel]
		if n, ok := numbers[h]; ok && h != updateHash && n > best {
			current, best = h, n
		}
	}
	return current
}

// revisionsToPrune picks the revisions to delete: beyond limit, oldest first, never one a pod still runs nor the
// update or current revision.
func revisionsToPrune(revs []appsv1.ControllerRevision, pods []*corev1.Pod, keep map[string]bool, limit int) []*appsv1.ControllerRevision {
	inUse := map[string]bool{}
	for _, pod := range pods {
		inUse[pod.Labels[RevisionLabel]] = true
	}
	var old []*appsv1.ControllerRevision
	for i := range revs {
		h := revs[i].Labels[RevisionLabel]
		if !inUse[h] && !keep[h] {
			old = append(old, &revs[i])
		}
	}
	if len(old) <= limit {
		return nil
	}
	sort.Slice(old, func(i, j int) bool { return old[i].Revision < old[j].Revision })
	return old[:len(old)-limit]
}

// pruneRevisions deletes the revisions beyond the history limit.
func (r *Reconciler) pruneRevisions(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, revs []appsv1.ControllerRevision,
	pods []*corev1.Pod, h revisions) error {
	// The stable revision is what a failure policy rolls back to: kept whatever the history limit.
	keep := map[string]bool{h.updateHash: true, h.currentHash: true, ds.Status.StableRevision: true}
	for _, rev := range revisionsToPrune(revs, pods, keep, revisionHistoryLimit(ds)) {
		if err := r.Delete(ctx, rev); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting old revision %s: %w", rev.Name, err)
		}
	}
	return nil
}

// createRevision creates rev. When its name is taken (as apps/v1 does, the revision is read and compared rather than
// trusted): a revision of this DaemonSet the cache has not shown yet, or an orphan left by an earlier DaemonSet of
// the same name (`kubectl delete --cascade=orphan`, then applied again), that records the same template is used,
// the orphan adopted; any other (another template, another owner) is taken, and the caller salts the hash.
// It returns the revision read live when the name was taken by one it uses (nil when it created rev).
func (r *Reconciler) createRevision(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, rev *appsv1.ControllerRevision,
	template *corev1.PodTemplateSpec) (live *appsv1.ControllerRevision, taken bool, err error) {
	err = r.Create(ctx, rev)
	if err == nil {
		return nil, false, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("creating revision %s: %w", rev.Name, err)
	}
	var existing appsv1.ControllerRevision
	if err := r.liveReader().Get(ctx, client.ObjectKeyFromObject(rev), &existing); err != nil {
		return nil, false, fmt.Errorf("reading revision %s, whose name is taken: %w", rev.Name, err)
	}
	recorded, err := templateOfRevision(&existing)
	if err != nil || !equality.Semantic.DeepEqual(recorded, template) {
		return nil, true, nil
	}
	switch controllerUID(&existing) {
	case string(ds.UID):
		return &existing, false, nil
	case "":
		if metav1.GetControllerOf(&existing) != nil || existing.Labels[daemonsetv1alpha1.NameLabel] != ds.Name {
			return nil, true, nil
		}
		if done, err := r.adoptRevision(ctx, ds, &existing); err != nil {
			return nil, false, err
		} else if !done {
			return nil, false, fmt.Errorf("revision %s changed while it was being adopted", rev.Name)
		}
		return &existing, false, nil
	default:
		return nil, true, nil
	}
}

// adoptRevisions takes back the revisions an earlier DaemonSet of the same name left orphaned (labelled with the
// name, no controller), so a DaemonSet re-created after `kubectl delete --cascade=orphan` keeps its history and its
// pods' revision, as apps/v1 adopts its orphaned revisions. It returns the revisions adopted. Only a DaemonSet that
// still exists as read live and is not being deleted adopts: an adopted revision would go with a deleted one.
func (r *Reconciler) adoptRevisions(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) ([]appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{orphanIndex: ds.Name}); err != nil {
		return nil, fmt.Errorf("listing orphaned revisions: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	if live, err := r.liveAndStaying(ctx, ds); err != nil || !live {
		return nil, err
	}
	var adopted []appsv1.ControllerRevision
	for i := range list.Items {
		rev := &list.Items[i]
		if metav1.GetControllerOf(rev) != nil {
			continue
		}
		if done, err := r.adoptRevision(ctx, ds, rev); err != nil {
			return nil, err
		} else if !done {
			continue // changed or gone meanwhile: a later pass sees it as it is
		}
		adopted = append(adopted, *rev)
	}
	return adopted, nil
}

// adoptRevision adds ds as the controller of rev, guarded by rev's resourceVersion (patchOwners).
func (r *Reconciler) adoptRevision(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, rev *appsv1.ControllerRevision) (bool, error) {
	done, err := r.patchOwners(ctx, rev, append(slices.Clone(rev.OwnerReferences), ownerReference(ds)))
	if err != nil {
		return false, fmt.Errorf("adopting revision %s: %w", rev.Name, err)
	}
	if done {
		log.FromContext(ctx).Info("Adopted orphaned revision", "revision", rev.Name)
	}
	return done, nil
}

// orphanOldRevisions does the garbage collector's part of an orphan delete for the revisions of ds whose data an
// earlier version of the controller wrote in another form than revisionData: the collector takes an owner
// reference off with a strategic merge patch, which passes the revision through unstructured form and reads such
// data as changed, so the apiserver refuses it (data is immutable) and the orphan finalizer stays for good. A merge
// patch keeps data as it is, byte for byte: the controller takes its own owner reference off that way, under the
// revision's resourceVersion, and the collector then finds nothing to do and lets the DaemonSet go.
func (r *Reconciler) orphanOldRevisions(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) error {
	if !slices.Contains(ds.Finalizers, metav1.FinalizerOrphanDependents) {
		return nil
	}
	var list appsv1.ControllerRevisionList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{ownerIndex: string(ds.UID)}); err != nil {
		return fmt.Errorf("listing revisions: %w", err)
	}
	for i := range list.Items {
		rev := &list.Items[i]
		if string(canonicalJSON(rev.Data.Raw)) == string(rev.Data.Raw) {
			continue // the collector's own patch goes through
		}
		done, err := r.patchOwners(ctx, rev, withoutOwner(rev.OwnerReferences, ds))
		if err != nil {
			return fmt.Errorf("orphaning revision %s: %w", rev.Name, err)
		}
		if done { // else changed or gone meanwhile: its update brings another pass
			log.FromContext(ctx).Info("Orphaned revision the garbage collector cannot patch", "revision", rev.Name)
		}
	}
	return nil
}
