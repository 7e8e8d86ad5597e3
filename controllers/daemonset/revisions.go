package daemonset

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			if err := r.Create(ctx, rev); err != nil {
				return out, fmt.Errorf("creating revision %s: %w", rev.Name, err)
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
	for _, rev := range revisionsToPrune(revs, pods, map[string]bool{h.updateHash: true, h.currentHash: true},
		revisionHistoryLimit(ds)) {
		if err := r.Delete(ctx, rev); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting old revision %s: %w", rev.Name, err)
		}
	}
	return nil
}
