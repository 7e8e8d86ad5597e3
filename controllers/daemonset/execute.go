package daemonset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// execute carries out a plan: deletions first (a node's old pod goes before its replacement is created in a later
// pass), then updates in place, then creations in slow-start batches of 1, 2, 4, … that stop at the first failure,
// so a template the apiserver rejects (quota, admission) costs one request, not one per node; then the readiness
// gates to open. Every write is registered with the expectations before it is sent, so the next pass waits until
// the cache has seen it. Successes make one event per pass ("Created pods of revision 5d8f9c7b6"), and the passes
// of a rollout fold into one event series (recorder.Subject): an event per pod would double a rollout's writes on a
// thousand nodes (each pod's name and node are in the debug log). Every failure keeps its own warning. A failed
// delete or update does not hold back the rest: a new node must not wait for another node's pod.
func (r *Reconciler) execute(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, p plan,
	templates map[string]*corev1.PodTemplateSpec) error {
	// A failed delete holds back nothing else: the planner never creates a pod on a node in the pass that deletes
	// that node's pod, so the creations, updates and gates of other nodes stand on their own.
	deleteErr := r.deletePods(ctx, ds, key, p.deletes)
	updateErr := r.updatePods(ctx, ds, key, p.updates, templates)
	return errors.Join(deleteErr, updateErr, r.createPods(ctx, ds, key, p.creates, templates),
		r.openGates(ctx, key, p.gatesReady))
}

// updatePods updates pods in place to their new revision, all at once (the planner has kept them within
// maxUnavailable): for a pod with the in-place readiness gate, first the gate is closed, so Services stop sending
// the pod traffic before the kubelet stops its containers; then one patch (see inPlacePatch). A pod that changed
// since the cache read it (a conflict) or is gone is left to the next pass, which reads it again. A pod the
// apiserver will not change this way (an admission policy, say) is replaced instead.
func (r *Reconciler) updatePods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, updates []podUpdate,
	templates map[string]*corev1.PodTemplateSpec) error {
	if len(updates) == 0 {
		return nil
	}
	for _, u := range updates {
		r.expectations.ExpectUpdate(key, u.pod.UID, u.hash)
	}
	var refused []podDelete
	var mu sync.Mutex
	errs := parallel(len(updates), func(i int) error {
		u := updates[i]
		err := r.updatePod(ctx, ds, u, templates)
		if err == nil {
			log.FromContext(ctx).V(1).Info("Updated pod in place", "pod", u.pod.Name, "node", PodNode(u.pod), "revision", u.hash)
			return nil
		}
		r.expectations.UpdateAbandoned(key, u.pod.UID) // no event will show an update that did not happen
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			return nil // gone, or changed since read: the next pass sees it as it is now
		case (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) && u.keepIfRefused:
			r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventFailedUpdate, Action: "Update",
				Note: fmt.Sprintf("Updating pod %s on node %s in place was refused; it is kept, as the node admits no new pod: %v", u.pod.Name, PodNode(u.pod), err), Related: u.pod})
			return nil
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			mu.Lock()
			refused = append(refused, podDelete{pod: u.pod, reason: deleteUpdate})
			mu.Unlock()
			r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventFailedUpdate, Action: "Update",
				Note: fmt.Sprintf("Updating pod %s on node %s in place was refused, so it is replaced: %v", u.pod.Name, PodNode(u.pod), err), Related: u.pod})
			return nil
		}
		r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventFailedUpdate, Action: "Update",
			Note: fmt.Sprintf("Updating pod %s on node %s in place failed: %v", u.pod.Name, PodNode(u.pod), err), Related: u.pod})
		return fmt.Errorf("updating pod %s in place: %w", u.pod.Name, err)
	})
	var revisions []string
	for i, err := range errs {
		if err == nil && !slices.ContainsFunc(refused, func(d podDelete) bool { return d.pod == updates[i].pod }) {
			revisions = append(revisions, updates[i].hash)
		}
	}
	if len(revisions) > 0 {
		r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeNormal, Reason: eventUpdated, Action: "Update",
			Note: fmt.Sprintf("Updated pods in place to revision %s", distinct(revisions))})
	}
	// Each refused pod was going to be unavailable for its update anyway: replacing it costs the budget no more.
	return errors.Join(append(errs, r.deletePods(ctx, ds, key, refused))...)
}

// updatePod closes u.pod's readiness gate if it has one, then patches it to its new revision.
func (r *Reconciler) updatePod(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, u podUpdate,
	templates map[string]*corev1.PodTemplateSpec) error {
	from, to := templates[u.pod.Labels[RevisionLabel]], templates[u.hash]
	if from == nil || to == nil { // the planner only updates pods of recorded revisions
		return fmt.Errorf("no recorded template to update pod %s in place", u.pod.Name)
	}
	pod := u.pod.DeepCopy()
	// A change the kubelet restarts no container for (the template's labels alone) leaves the pod in its Services:
	// closing the gate would take it out and put it back for nothing.
	images, _ := inPlaceImages(from, to)
	restarts := len(inPlaceRestarts(pod, images)) > 0
	if restarts && hasInPlaceGate(pod) && inPlaceGateStatus(pod) != corev1.ConditionFalse {
		body, err := gatePatch(pod, corev1.ConditionFalse, "UpdatingInPlace",
			"the pod is being updated in place to revision "+u.hash, r.now())
		if err != nil {
			return err
		}
		// The patch is guarded by the resourceVersion read, and answers with the pod as it now is: the update
		// below is guarded by that version.
		if err := r.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
			return err
		}
	}
	body, err := inPlacePatch(ds, pod, from, to, u.hash, r.now())
	if err != nil {
		return err
	}
	return r.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
}

// openGates sets the in-place readiness gate of pods True, each patch guarded by the pod's resourceVersion.
func (r *Reconciler) openGates(ctx context.Context, key string, pods []*corev1.Pod) error {
	ready := gateState(corev1.ConditionTrue)
	for _, pod := range pods {
		r.expectations.ExpectUpdate(key, pod.UID, ready)
	}
	errs := parallel(len(pods), func(i int) error {
		pod := pods[i].DeepCopy()
		body, err := gatePatch(pod, corev1.ConditionTrue, "Ready", "", r.now())
		if err == nil {
			err = r.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
		}
		if err != nil {
			r.expectations.UpdateAbandoned(key, pod.UID)
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // gone, or changed since read: the next pass sees it as it is now
			}
			return fmt.Errorf("opening the readiness gate of pod %s: %w", pod.Name, err)
		}
		return nil
	})
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
			r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventFailedDelete, Action: "Delete",
				Note: fmt.Sprintf("Deleting %s pod %s on node %s failed: %v", d.reason, d.pod.Name, PodNode(d.pod), err), Related: d.pod})
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
		r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeNormal, Reason: eventDeleted, Action: "Delete",
			Note: fmt.Sprintf("Deleted %s pods", deletedKinds(done))})
	}
	return errors.Join(errs...)
}

func (r *Reconciler) createPods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, creates []podCreate,
	templates map[string]*corev1.PodTemplateSpec) error {
	r.expectations.ExpectCreations(key, len(creates))
	var revisions []string
	defer func() {
		if len(revisions) > 0 {
			r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeNormal, Reason: eventCreated, Action: "Create",
				Note: fmt.Sprintf("Created pods of revision %s", distinct(revisions))})
		}
	}()
	for start, batch := 0, 1; start < len(creates); start, batch = start+batch, batch*2 {
		chunk := creates[start:min(start+batch, len(creates))]
		refused := make([]error, len(chunk)) // the apiserver's answers, for the batch's one event
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
				refused[i] = err
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
		// One event for a failed batch, telling its first failure (the others are in the pass's error): a quota
		// refusing a batch of hundreds would otherwise write hundreds of events, each naming its node.
		if i := slices.IndexFunc(refused, func(err error) bool { return err != nil }); i >= 0 {
			r.record(ctx, ds, recorder.Event{Type: corev1.EventTypeWarning, Reason: eventFailedCreate, Action: "Create",
				Note: fmt.Sprintf("Creating a pod for node %s failed: %v", chunk[i].node, refused[i])})
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
	out := slices.Sorted(maps.Keys(set))
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
