package daemonset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// Reconcile is one pass over one DaemonSet, in the steps the three controllers share (docs/architecture.md): fetch
// it, start from the status last written, finalize it when it is being deleted, reconcile it (read, decide, act,
// derive the status), and finish (write the status, tell what changed, say when to look again). A DaemonSet holds
// no finalizer: owner references take its pods and revisions with it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.init()
	ds := &daemonsetv1alpha1.DaemonSet{}
	if err := r.Get(ctx, req.NamespacedName, ds); err != nil {
		return passerr.Gone(err, func() { r.forget(req.String()) })
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("daemonset", klog.KObj(ds)))
	// The status this process last wrote is newer than a cache that has not caught up with it: a pass starts from
	// that one and compares with it (see controllers/internal/statuswrite).
	ds.Status = *r.written.Current(ds, &ds.Status)
	if ds.DeletionTimestamp != nil {
		return r.finalize(ctx, ds)
	}
	return r.finish(ctx, req, ds, r.reconcile(ctx, ds))
}

// outcome is what a pass did: when to look again, the status it derived (nil: none to write) and its error.
type outcome struct {
	result ctrl.Result
	status *daemonsetv1alpha1.DaemonSetStatus
	err    error
}

// finish ends a pass: it writes the status the pass derived (unless only counters moved moments after the last
// write), reports the rollout's news once written, and says when to look again.
func (r *Reconciler) finish(ctx context.Context, req ctrl.Request, ds *daemonsetv1alpha1.DaemonSet, out outcome) (ctrl.Result, error) {
	result, status, err := out.result, out.status, out.err
	if passerr.OnlyNamespaceTerminating(err) {
		// Only creates refused because the namespace is being deleted: nothing created in it would stay, and its
		// deletion removes this DaemonSet too. As an error the pass would be retried, refused and logged again and
		// again until then.
		log.FromContext(ctx).V(1).Info("Creating nothing: the namespace is being deleted", "refused", err.Error())
		err = nil
	}
	// A status equal to the stored one is not written again.
	stored := ds.Status
	if status != nil && !equality.Semantic.DeepEqual(stored, *status) {
		now := r.now()
		interval := statusIntervalFor(status.DesiredNumberScheduled)
		// A failing pass is not paced: the work queue retries it after its backoff, ignoring RequeueAfter, and the
		// backoff (which grows while the failures last) already spaces its writes out.
		if wait := r.pacer.WaitFor(req.String(), interval, now); wait > 0 && err == nil && !statusUrgent(stored, *status) {
			// Only counters moved, and the last write was moments ago: write with a later pass.
			result.RequeueAfter = sooner(result.RequeueAfter, wait)
			return result, err
		}
		conflict, serr := r.writeStatus(ctx, ds, *status)
		switch {
		case apierrors.IsNotFound(serr):
			// Deleted since the cache was read: no status to write, and the garbage collector removes what the
			// pass made.
			r.forget(req.String())
			return ctrl.Result{}, nil
		case serr != nil:
			err = errors.Join(err, serr)
		case conflict:
			// Someone else moved the object; not an error worth a backoff: look again in a moment.
			result.RequeueAfter = sooner(result.RequeueAfter, conflictRequeue)
		default:
			r.pacer.Wrote(req.String(), now)
			r.reportRollout(ctx, ds, stored, *status, now)
		}
	}
	return result, err
}

// sooner is the earlier of two requeue delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// reconcile does the work and returns its outcome, with the status to write (nil when it could not be computed): it
// reads the world (read), decides what holds for the rollout (decide), acts on it (act) and derives the status
// (passStatus).
func (r *Reconciler) reconcile(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) outcome {
	key := client.ObjectKeyFromObject(ds).String()
	now := r.now()
	w, err := r.read(ctx, ds, key)
	if err != nil || w.stop {
		return outcome{err: err} // stopped: the DaemonSet is gone or going; its own events bring the next pass
	}
	template := EffectiveTemplate(ds)
	history, err := r.syncRevisions(ctx, ds, template, w.revisions, w.pods)
	if err != nil {
		return outcome{err: err}
	}
	w.revisions = append(w.revisions, history.readLive...)
	views, err := buildViews(ds, template, w.nodes, w.pods, w.terminating, r.backoffFor(ds, history.updateHash, now))
	if err != nil {
		return outcome{err: err}
	}
	d := r.decide(ctx, ds, template, views, history, w.revisions, now)
	result, actErr := r.act(ctx, ds, key, w, views, history, d, now)
	if w.retryAdoption {
		result.RequeueAfter = sooner(result.RequeueAfter, conflictRequeue)
	}
	status, wait := passStatus(ds, views, history, d, now)
	result.RequeueAfter = sooner(result.RequeueAfter, wait)
	return outcome{result: result, status: &status, err: actErr}
}

// passWorld is what a pass reads: the nodes, the DaemonSet's pods (those on their way out counted by node) and
// revisions, whether the expectations let it create and delete, and whether an adoption is to be retried.
type passWorld struct {
	satisfied     bool
	nodes         []*corev1.Node
	pods          []*corev1.Pod
	terminating   map[string]int
	revisions     []appsv1.ControllerRevision
	retryAdoption bool
	// stop: the DaemonSet is gone or going, found while adopting.
	stop bool
}

// read reads the world of a pass, adopting and releasing pods and revisions on the way.
func (r *Reconciler) read(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string) (passWorld, error) {
	var w passWorld
	// The expectations are asked before the cache is read: a creation or deletion observed between the read and
	// the question would otherwise make a stale list look trustworthy (a second pod on a node, an old pod
	// deleted twice). A pass that is not satisfied creates and deletes no pod and prunes no revision; it still
	// adopts and releases pods, records revisions and writes the status, none of which needs a current pod count.
	if err := r.seedExpectations(ctx, ds, key); err != nil {
		return w, err
	}
	w.satisfied = r.expectations.Satisfied(key)

	// The nodes are read, never written: the cache's own objects, not a copy of every node on every pass.
	var err error
	if w.nodes, err = r.allNodes(ctx); err != nil {
		return w, err
	}
	owned, err := r.ownedPods(ctx, ds)
	if err != nil {
		return w, err
	}
	hand, err := r.adoptAndRelease(ctx, ds, owned)
	if err != nil || hand.stop {
		w.stop = hand.stop
		return w, err
	}
	retryVanished, err := r.releaseVanished(ctx, ds, key)
	if err != nil {
		return w, err
	}
	w.retryAdoption = hand.retry || retryVanished
	w.pods, w.terminating = splitPods(hand.pods)
	for node, n := range hand.occupied {
		w.terminating[node] += n // an orphan not adopted yet holds its node as a pod on its way out does
	}
	var revList appsv1.ControllerRevisionList
	if err := r.List(ctx, &revList, client.InNamespace(ds.Namespace), client.MatchingFields{ownerIndex: string(ds.UID)}); err != nil {
		return w, fmt.Errorf("listing revisions: %w", err)
	}
	adopted, err := r.adoptRevisions(ctx, ds)
	if err != nil {
		return w, err
	}
	w.revisions = append(revList.Items, adopted...)
	return w, nil
}

// passDecision is what holds for the rollout in a pass: its strategy and the revisions it plans with (the ones a
// failure keeps or rolls back to), the failure policy's verdict, and a selector that does not select the template.
type passDecision struct {
	strategy                strategy
	updateHash, currentHash string
	verdict                 failureDecision
	mismatch                string
}

// decide resolves the strategy and judges the rollout by its failure policy, recording a failure on its revision.
func (r *Reconciler) decide(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec,
	views []nodeView, history revisions, revs []appsv1.ControllerRevision, now time.Time) passDecision {
	s := strategyFor(ds, template, views)
	if s.inPlace {
		s.inPlaceFrom = inPlaceFrom(history.templates, history.updateHash)
	}
	verdict := decideFailure(views, failureInput{policy: failurePolicy(ds), generation: ds.Generation,
		updateHash: history.updateHash, currentHash: history.currentHash, stableHash: ds.Status.StableRevision,
		recorded: recordedFailure(ds.Status.RolloutFailure, revs, history.updateHash), known: history.templates,
		strategy: s, now: now})
	if err := r.syncFailureRecords(ctx, revs, verdict.failure); err != nil {
		// The status holds the failure too: a revision that cannot be annotated (a policy refusing the patch) must not
		// stop the pass, only the record that survives a lost status.
		log.FromContext(ctx).Error(err, "Could not record the rollout failure on its revision")
	}
	// Under a failure the pass plans with the revision it keeps or rolls back to, and so does the status.
	s, updateHash, currentHash := underFailure(verdict.failure, s, history.updateHash, history.currentHash,
		ds.Status.StableRevision, history.templates)
	return passDecision{strategy: s, updateHash: updateHash, currentHash: currentHash, verdict: verdict,
		mismatch: selectorMismatch(ds, template)}
}

// act creates, deletes and updates pods as the plan says, when the pass may: not with a selector that does not
// select the template, nor in the pass that declares a failure, nor before the cache shows the last writes.
func (r *Reconciler) act(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, key string, w passWorld, views []nodeView,
	history revisions, d passDecision, now time.Time) (ctrl.Result, error) {
	var result ctrl.Result
	switch {
	case d.mismatch != "":
		// The apiserver refuses such a DaemonSet (its CRD's rules), but one stored before those rules came would
		// have every pod made for it go unseen on the next pass, and a new one made in its place, without end.
		log.FromContext(ctx).Info("Creating no pod: the selector does not match the template", "mismatch", d.mismatch)
	case d.verdict.declared:
		// A failure is stored before it is acted on: acted on (failed pods deleted) but never stored (a refused
		// status write, a leader gone), the next pass would find no failure and roll the failed revision out again.
		// The next pass, a moment after the status write, acts on the failure it reads back.
		result.RequeueAfter = conflictRequeue
	case w.satisfied:
		p := planNodes(views, d.strategy, d.updateHash, d.currentHash, now)
		p.share(r.passWrites())
		progressing := len(p.creates)+len(p.deletes)+len(p.updates) > 0
		log.FromContext(ctx).V(1).Info("Planned", "nodes", len(w.nodes), "pods", len(w.pods),
			"creates", len(p.creates), "deletes", len(p.deletes), "updates", len(p.updates), "requeueAfter", p.requeueAfter)
		for _, node := range p.failedNodes {
			r.backoff.failed(backoffKey(ds, history.updateHash, node), now)
		}
		actErr := r.execute(ctx, ds, key, p, history.templates)
		result.RequeueAfter = sooner(p.requeueAfter, d.verdict.recheck)
		if actErr == nil && !progressing {
			actErr = r.pruneRevisions(ctx, ds, w.revisions, w.pods, history)
		}
		return result, actErr
	default:
		// Held back until the cache shows the last writes, whose events wake the DaemonSet. Should they never come,
		// wake it when the expectations expire: a quiet cluster would otherwise leave it waiting for good.
		result.RequeueAfter = r.expectations.Remaining(key)
	}
	return result, nil
}

// passStatus is the status the pass found, and how soon to look again when the update revision may become the
// stable one with no event to mark the moment (0 for no need).
func passStatus(ds *daemonsetv1alpha1.DaemonSet, views []nodeView, history revisions, d passDecision,
	now time.Time) (daemonsetv1alpha1.DaemonSetStatus, time.Duration) {
	var wait time.Duration
	status := computeStatus(ds.Status, views, statusInput{
		generation: ds.Generation, updateHash: d.updateHash, currentHash: d.currentHash,
		collisionCount: history.collisionCount, strategy: d.strategy, now: now,
	})
	if ok, w := settled(views, d.updateHash, settleTime(ds), now); ok {
		status.StableRevision = d.updateHash // what a failure policy rolls back to
	} else if w > 0 && status.StableRevision != d.updateHash {
		wait = w
	}
	if d.verdict.failure != nil {
		markFailure(&status, d.verdict.failure, d.strategy.paused && status.UpdatedNumberScheduled < status.DesiredNumberScheduled)
	}
	if d.mismatch != "" {
		markSelectorMismatch(&status, d.mismatch)
	}
	keepTransitionTimes(status.Conditions, ds.Status.Conditions)
	return status, wait
}

// backoffFor returns how long failed pods of ds on a node must still wait under the template revision updateHash.
func (r *Reconciler) backoffFor(ds *daemonsetv1alpha1.DaemonSet, updateHash string, now time.Time) func(node string) time.Duration {
	return func(node string) time.Duration { return r.backoff.remaining(backoffKey(ds, updateHash, node), now) }
}
