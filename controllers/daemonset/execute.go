package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// Event reasons.
const (
	eventCreated      = "SuccessfulCreate"
	eventDeleted      = "SuccessfulDelete"
	eventFailedCreate = "FailedCreate"
	eventFailedDelete = "FailedDelete"
	eventUpdated      = "SuccessfulUpdateInPlace"
	eventFailedUpdate = "FailedUpdateInPlace"
)

// execute carries out a plan: deletions first (a node's old pod goes before its replacement is created in a later
// pass), then creations in slow-start batches of 1, 2, 4, … that stop at the first failure, so a template the
// apiserver rejects (quota, admission) costs one request, not one per node. Every write is registered with the
// expectations before it is sent, so the next pass waits until the cache has seen it. Successes make one event
// per pass ("Created pods of revision 5d8f9c7b6"), and the passes of a rollout fold into one event series (see
// eventSubject): an event per pod would double a rollout's writes on a
// thousand nodes (each pod's name and node are in the debug log). Every failure keeps its own warning.
func (r *Reconciler) execute(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, p plan,
	templates map[string]*corev1.PodTemplateSpec) error {
	if err := r.deletePods(ctx, ds, key, p.deletes); err != nil {
		return err
	}
	if err := r.updatePods(ctx, ds, key, p.updates, templates); err != nil {
		return err
	}
	return r.createPods(ctx, ds, key, p.creates, templates)
}

// updatePods patches pods in place to their new revision (see inPlacePatch), all at once: the planner has already
// kept them within maxUnavailable. A pod that changed since the cache read it (a conflict) or is gone is left to the
// next pass, which reads it again.
func (r *Reconciler) updatePods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, updates []podUpdate,
	templates map[string]*corev1.PodTemplateSpec) error {
	if len(updates) == 0 {
		return nil
	}
	for _, u := range updates {
		r.expectations.ExpectUpdate(key, u.pod.UID, u.hash)
	}
	errs := parallel(len(updates), func(i int) error {
		u := updates[i]
		from, to := templates[u.pod.Labels[RevisionLabel]], templates[u.hash]
		if from == nil || to == nil { // the planner only updates pods of recorded revisions
			r.expectations.UpdateAbandoned(key, u.pod.UID)
			return fmt.Errorf("no recorded template to update pod %s in place", u.pod.Name)
		}
		body, err := inPlacePatch(u.pod, from, to, u.hash)
		if err == nil {
			err = r.Patch(ctx, u.pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, body))
		}
		if err != nil {
			r.expectations.UpdateAbandoned(key, u.pod.UID) // no event will show an update that did not happen
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // gone, or changed since read: the next pass sees it as it is now
			}
			r.Recorder.Eventf(eventSubject(ds), u.pod, corev1.EventTypeWarning, eventFailedUpdate, "Update",
				"Updating pod %s on node %s in place failed: %v", u.pod.Name, PodNode(u.pod), err)
			return fmt.Errorf("updating pod %s in place: %w", u.pod.Name, err)
		}
		log.FromContext(ctx).V(1).Info("Updated pod in place", "pod", u.pod.Name, "node", PodNode(u.pod), "revision", u.hash)
		return nil
	})
	var revisions []string
	for i, err := range errs {
		if err == nil {
			revisions = append(revisions, updates[i].hash)
		}
	}
	if len(revisions) > 0 {
		r.Recorder.Eventf(eventSubject(ds), nil, corev1.EventTypeNormal, eventUpdated, "Update",
			"Updated pods in place to revision %s", distinct(revisions))
	}
	return errors.Join(errs...)
}

func (r *Reconciler) deletePods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, deletes []podDelete) error {
	if len(deletes) == 0 {
		return nil
	}
	uids := make([]types.UID, 0, len(deletes))
	for _, d := range deletes {
		uids = append(uids, d.pod.UID)
	}
	r.expectations.ExpectDeletions(key, uids...)
	errs := parallel(len(deletes), func(i int) error {
		d := deletes[i]
		err := r.Delete(ctx, d.pod, client.Preconditions{UID: &d.pod.UID})
		if err != nil {
			r.expectations.DeletionObserved(key, d.pod.UID) // no event will come for a deletion that did not happen
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // already gone, or replaced by another pod of the same name
			}
			r.Recorder.Eventf(eventSubject(ds), d.pod, corev1.EventTypeWarning, eventFailedDelete, "Delete",
				"Deleting %s pod %s on node %s failed: %v", d.reason, d.pod.Name, PodNode(d.pod), err)
			return fmt.Errorf("deleting pod %s: %w", d.pod.Name, err)
		}
		log.FromContext(ctx).V(1).Info("Deleted pod", "pod", d.pod.Name, "node", PodNode(d.pod), "reason", d.reason)
		return nil
	})
	var done []string
	for i, err := range errs {
		if err == nil {
			done = append(done, deletes[i].reason)
		}
	}
	if len(done) > 0 {
		r.Recorder.Eventf(eventSubject(ds), nil, corev1.EventTypeNormal, eventDeleted, "Delete", "Deleted %s pods", deletedKinds(done))
	}
	return errors.Join(errs...)
}

func (r *Reconciler) createPods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, creates []podCreate,
	templates map[string]*corev1.PodTemplateSpec) error {
	r.expectations.ExpectCreations(key, len(creates))
	var revisions []string
	defer func() {
		if len(revisions) > 0 {
			r.Recorder.Eventf(eventSubject(ds), nil, corev1.EventTypeNormal, eventCreated, "Create", "Created pods of revision %s",
				distinct(revisions))
		}
	}()
	for start, batch := 0, 1; start < len(creates); start, batch = start+batch, batch*2 {
		chunk := creates[start:min(start+batch, len(creates))]
		errs := parallel(len(chunk), func(i int) error {
			c := chunk[i]
			template, ok := templates[c.hash]
			if !ok {
				r.expectations.CreationObserved(key)
				return fmt.Errorf("no recorded template for revision %s", c.hash)
			}
			pod := newPod(ds, template, c.hash, c.node)
			if err := r.Create(ctx, pod); err != nil {
				r.expectations.CreationObserved(key) // a failed creation will never be observed
				if passerr.NamespaceTerminating(err) {
					return err // no event: it could not be written in a namespace being deleted either
				}
				r.Recorder.Eventf(eventSubject(ds), nil, corev1.EventTypeWarning, eventFailedCreate, "Create",
					"Creating a pod for node %s failed: %v", c.node, err)
				return fmt.Errorf("creating a pod for node %s: %w", c.node, err)
			}
			log.FromContext(ctx).V(1).Info("Created pod", "pod", pod.Name, "node", c.node, "revision", c.hash)
			return nil
		})
		for i, err := range errs {
			if err == nil {
				revisions = append(revisions, chunk[i].hash)
			}
		}
		if err := errors.Join(errs...); err != nil {
			// The batches not attempted will not be observed either.
			for range len(creates) - start - len(chunk) {
				r.expectations.CreationObserved(key)
			}
			return err
		}
	}
	return nil
}

// eventSubject is the DaemonSet as its events refer to it: without the resourceVersion, which every status write
// changes. The recorder folds repeated events into a series only when they regard the very same reference, so with
// it each pass of a rollout would create a new event instead of counting one more.
func eventSubject(ds *daemonsetv1alpha1.DaemonSet) *daemonsetv1alpha1.DaemonSet {
	return &daemonsetv1alpha1.DaemonSet{TypeMeta: ds.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: ds.Namespace, UID: ds.UID}}
}

// deletedKinds names the kinds of pods deleted, for an event: "outdated", "failed and misscheduled".
func deletedKinds(reasons []string) string {
	words := map[string]string{deleteUpdate: "outdated", deleteFailed: "failed", deleteSucceeded: "succeeded",
		deleteMisscheduled: "misscheduled", deleteDuplicate: "duplicate"}
	named := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if w, ok := words[r]; ok {
			r = w
		}
		named = append(named, r)
	}
	return distinct(named)
}

// distinct joins the distinct values, sorted: "a", "a and b", "a, b and c".
func distinct(values []string) string {
	set := map[string]bool{}
	for _, v := range values {
		set[v] = true
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	if len(out) <= 1 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

// parallel runs fn for 0..n-1 concurrently and returns the errors.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errs
}
