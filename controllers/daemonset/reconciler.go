// Package daemonset is the controller behind Keelson's DaemonSet: one pod per eligible node, rolled out node by
// node. Reconcile asks the expectations whether the cache has seen its last writes, then reads the DaemonSet, the
// nodes and its pods from the cache, asks the pure planner (rollout.go) what to create and delete, does it in
// slow-start batches guarded by expectations, and writes the status once.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/expectations"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// Failed pods on a node are replaced after a backoff that doubles from failedPodBackoffInitial up to
// failedPodBackoffMax, as apps/v1 does, so a pod that fails at once does not cause a create/delete hot loop.
const (
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
)

// Reconciler reconciles Keelson DaemonSets.
type Reconciler struct {
	client.Client
	// Recorder emits events on DaemonSets.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil): it dates failures for their back-off, paces status writes and stamps
	// the in-place readiness gate.
	Now func() time.Time

	// APIReader reads pods live, past the cache, on a DaemonSet's first pass in this process (see seedExpectations)
	// and before adopting a pod; SetupWithManager sets the manager's.
	APIReader client.Reader

	initOnce     sync.Once
	expectations *expectations.Expectations
	backoff      *failureBackoff
	pacer        *pacing.Pacer
	seeded       *seenSet
	written      *writtenStatuses
	vanished     *vanishedPods
}

// RBAC of the daemonset-controller (make manifests turns these into its ClusterRole).
// +kubebuilder:rbac:groups=daemonset.keelson.dev,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=daemonset.keelson.dev,resources=daemonsets/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete

func (r *Reconciler) init() {
	r.initOnce.Do(func() {
		r.expectations = expectations.New()
		r.backoff = newFailureBackoff(failedPodBackoffInitial, failedPodBackoffMax)
		r.pacer = pacing.New(statusInterval)
		r.seeded = newSeenSet()
		r.written = newWrittenStatuses()
		r.vanished = newVanishedPods()
	})
}

// now reads the clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile brings one DaemonSet's pods in line with its nodes and template, and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.init()
	ds := &daemonsetv1alpha1.DaemonSet{}
	if err := r.Get(ctx, req.NamespacedName, ds); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ds.DeletionTimestamp != nil {
		r.forget(req.String())
		return ctrl.Result{}, nil // the garbage collector removes the pods and revisions it owns
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("daemonset", klog.KObj(ds)))

	result, status, err := r.reconcile(ctx, ds)
	if err != nil && len(passerr.Remaining(err)) == 0 {
		// Only creates refused because the namespace is being deleted: nothing created in it would stay, and its
		// deletion removes this DaemonSet too. As an error the pass would be retried, refused and logged again and
		// again until then.
		log.FromContext(ctx).V(1).Info("Creating nothing: the namespace is being deleted", "refused", err.Error())
		err = nil
	}
	// A status equal to the stored one is not written again. The stored status is the one this process wrote last
	// when it wrote any (the cache may not have seen that write, or may still show an older one: comparing with the
	// cache then would skip a needed write), else the cached one.
	stored := r.written.current(req.String(), ds.UID, ds.Status)
	if status != nil && !equality.Semantic.DeepEqual(stored, *status) {
		now := r.now()
		if wait := r.pacer.Wait(req.String(), now); wait > 0 && !statusUrgent(stored, *status) {
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
			result.RequeueAfter = sooner(result.RequeueAfter, statusConflictRequeue)
		default:
			r.pacer.Wrote(req.String(), now)
			r.written.wrote(req.String(), ds.UID, *status)
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

// reconcile does the work and returns the status to write (nil when it could not be computed).
func (r *Reconciler) reconcile(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) (ctrl.Result, *daemonsetv1alpha1.DaemonSetStatus, error) {
	key := client.ObjectKeyFromObject(ds).String()
	now := r.now()

	// The expectations are asked before the cache is read: a creation or deletion observed between the read and
	// the question would otherwise make a stale list look trustworthy (a second pod on a node, an old pod
	// deleted twice). A pass that is not satisfied creates and deletes no pod and prunes no revision; it still
	// adopts and releases pods, records revisions and writes the status, none of which needs a current pod count.
	if err := r.seedExpectations(ctx, ds, key); err != nil {
		return ctrl.Result{}, nil, err
	}
	satisfied := r.expectations.Satisfied(key)

	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, nil, fmt.Errorf("listing nodes: %w", err)
	}
	owned, err := r.ownedPods(ctx, ds)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	hand, err := r.adoptAndRelease(ctx, ds, owned)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	if hand.stop {
		return ctrl.Result{}, nil, nil // the DaemonSet is gone or going; its own events bring the next pass
	}
	retryVanished, err := r.releaseVanished(ctx, ds, key)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	retryAdoption := hand.retry || retryVanished
	pods, terminating := splitPods(hand.pods)
	for node, n := range hand.occupied {
		terminating[node] += n // an orphan not adopted yet holds its node as a pod on its way out does
	}
	var revList appsv1.ControllerRevisionList
	if err := r.List(ctx, &revList, client.InNamespace(ds.Namespace), client.MatchingFields{ownerIndex: string(ds.UID)}); err != nil {
		return ctrl.Result{}, nil, fmt.Errorf("listing revisions: %w", err)
	}

	template := EffectiveTemplate(ds)
	history, err := r.syncRevisions(ctx, ds, template, revList.Items, pods)
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	views, err := buildViews(ds, template, nodes.Items, pods, terminating, r.backoffFor(ds, history.updateHash, now))
	if err != nil {
		return ctrl.Result{}, nil, err
	}
	s := strategyFor(ds, template, views)
	if s.inPlace {
		s.inPlaceFrom = inPlaceFrom(history.templates, history.updateHash)
	}

	var result ctrl.Result
	var actErr error
	if satisfied {
		p := planNodes(views, s, history.updateHash, history.currentHash, now)
		progressing := len(p.creates)+len(p.deletes)+len(p.updates) > 0
		log.FromContext(ctx).V(1).Info("Planned", "nodes", len(nodes.Items), "pods", len(pods),
			"creates", len(p.creates), "deletes", len(p.deletes), "updates", len(p.updates), "requeueAfter", p.requeueAfter)
		for _, node := range p.failedNodes {
			r.backoff.failed(backoffKey(ds, history.updateHash, node), now)
		}
		actErr = r.execute(ctx, ds, key, p, history.templates)
		result.RequeueAfter = p.requeueAfter
		if actErr == nil && !progressing {
			actErr = r.pruneRevisions(ctx, ds, revList.Items, pods, history)
		}
	} else {
		// Held back until the cache shows the last writes, whose events wake the DaemonSet. Should they never come,
		// wake it when the expectations expire: a quiet cluster would otherwise leave it waiting for good.
		result.RequeueAfter = r.expectations.Remaining(key)
	}
	if retryAdoption {
		result.RequeueAfter = sooner(result.RequeueAfter, statusConflictRequeue)
	}
	status := computeStatus(r.written.current(key, ds.UID, ds.Status), views, statusInput{
		generation: ds.Generation, updateHash: history.updateHash, currentHash: history.currentHash,
		collisionCount: history.collisionCount, strategy: s, now: now,
	})
	return result, &status, actErr
}

// ownedPods lists the pods the DaemonSet controls from the cache, those being deleted included.
func (r *Reconciler) ownedPods(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingFields{ownerIndex: string(ds.UID)}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// splitPods separates the pods the planner sees from those being deleted, which it counts per node (no new pod goes
// to a node while its old pod still runs). A terminal pod (Failed or Succeeded) whose deletion was requested counts
// as gone: its containers have stopped, and a finalizer holding it must not keep its node without a pod forever.
func splitPods(owned []*corev1.Pod) (pods []*corev1.Pod, terminating map[string]int) {
	terminating = map[string]int{}
	for _, pod := range owned {
		switch {
		case pod.DeletionTimestamp == nil:
			pods = append(pods, pod)
		case !isTerminal(pod):
			terminating[PodNode(pod)]++
		}
	}
	return pods, terminating
}

// isTerminal reports whether the pod's containers have all stopped for good.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// backoffKey names a node's failed-pod backoff for one DaemonSet and template revision: a new template starts
// without the backoff the old one earned (a fixed template must not wait out the broken one's 15 minutes).
func backoffKey(ds *daemonsetv1alpha1.DaemonSet, updateHash, node string) string {
	// namespace/name first, so that forgetting the DaemonSet by its key alone drops its entries; then the UID, so
	// that one created again under the name starts afresh.
	return ds.Namespace + "/" + ds.Name + "/" + string(ds.UID) + "/" + updateHash + "/" + node
}

// backoffFor returns how long failed pods of ds on a node must still wait under the template revision updateHash.
func (r *Reconciler) backoffFor(ds *daemonsetv1alpha1.DaemonSet, updateHash string, now time.Time) func(node string) time.Duration {
	return func(node string) time.Duration { return r.backoff.remaining(backoffKey(ds, updateHash, node), now) }
}

// buildViews turns nodes and pods into the planner's view: eligibility per node and the pods on each, sorted by
// name. Pods pinned to nodes that no longer exist get an ineligible view of their own, so they are removed.
func buildViews(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, nodes []corev1.Node, pods []*corev1.Pod,
	terminating map[string]int, backoff func(string) time.Duration) ([]nodeView, error) {
	var canary labels.Selector
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ru.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.updateStrategy.rollingUpdate.selector: %w", err)
		}
		canary = sel
	}
	spec := template.Spec.DeepCopy()
	spec.Tolerations = withDaemonTolerations(spec.Tolerations, spec.HostNetwork)

	byNode := map[string][]*corev1.Pod{}
	for _, pod := range pods {
		byNode[PodNode(pod)] = append(byNode[PodNode(pod)], pod)
	}
	views := make([]nodeView, 0, len(nodes))
	seen := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		seen[n.Name] = true
		views = append(views, nodeView{
			name:        n.Name,
			eligibility: nodeEligibility(n, spec),
			down:        nodeIsDown(n),
			canary:      canary == nil || canary.Matches(labels.Set(n.Labels)),
			pods:        byNode[n.Name],
			terminating: terminating[n.Name],
			backoff:     backoff(n.Name),
		})
	}
	for node, ps := range byNode {
		if !seen[node] {
			views = append(views, nodeView{name: node, pods: ps})
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].name < views[j].name })
	return views, nil
}

// strategyFor resolves the DaemonSet's update strategy against the number of eligible nodes.
func strategyFor(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, views []nodeView) strategy {
	desired := 0
	for _, v := range views {
		if v.shouldRun {
			desired++
		}
	}
	var knobs *rollingUpdateKnobs
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		knobs = &rollingUpdateKnobs{maxSurge: ru.MaxSurge, maxUnavailable: ru.MaxUnavailable,
			partition: int(ptr.Deref(ru.Partition, 0)), paused: ru.Paused,
			inPlace: ru.InPlace == daemonsetv1alpha1.InPlaceIfPossible}
	}
	onDelete := ds.Spec.UpdateStrategy.Type == daemonsetv1alpha1.OnDeleteStrategyType
	return resolveStrategy(knobs, onDelete, usesHostPorts(&template.Spec), ds.Spec.MinReadySeconds, desired)
}

// forget drops what the reconciler remembers of a DaemonSet that is gone, by its namespace/name alone: the one way
// every path that finds it gone (its deletion seen, a NotFound read or write) forgets it.
func (r *Reconciler) forget(key string) {
	r.expectations.Forget(key)
	r.backoff.forget(key + "/")
	r.pacer.Forget(key)
	r.seeded.forget(key)
	r.written.forget(key)
	r.vanished.forget(key)
}

// writeStatus writes status to the status subresource with a merge patch that states the whole status (see
// statusPatch) and carries no resourceVersion: it cannot conflict with this controller's own last write, which the
// cache may not have seen yet. It reports a conflict (possible only if the apiserver runs out of its own retries)
// apart from errors, for a short requeue.
func (r *Reconciler) writeStatus(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, status daemonsetv1alpha1.DaemonSetStatus) (conflict bool, err error) {
	body, err := statusPatch(status)
	if err != nil {
		return false, err
	}
	if err := r.Status().Patch(ctx, ds, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, fmt.Errorf("writing status: %w", err)
	}
	return false, nil
}
