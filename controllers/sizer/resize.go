package sizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// Deadlines of an in-place resize, after which the sizer falls back to a rolling update of the template (the
// vertical pod autoscaler's updater uses the same two): a resize the kubelet defers (the node lacks room now) gets
// five minutes, one in progress an hour.
const (
	DefaultResizeDeferredTimeout   = 5 * time.Minute
	DefaultResizeInProgressTimeout = time.Hour
)

// resizePollInterval is how often a sizer with resizes under way looks at its pods again: their progress is in pod
// status, which the sizer's metadata-only pod watch does not see.
const resizePollInterval = 5 * time.Second

// resizeOutcome is what the pods' resize conditions say.
type resizeOutcome struct {
	// pending: some pod's resize is not done yet.
	pending bool
	// fallback, when set, says why the sizer gives up on resizing in place (a resize refused, failed or past its
	// deadline): the resources then go into the template.
	fallback string
	// infeasible, when set, says why one pod cannot be resized in place on its node: that pod alone is evicted (its
	// replacement, resized once it runs, may land where there is room; evictInfeasible).
	infeasible string
	// held counts the pods whose resize restarts a container and waits for the disruption budget.
	held int
	// recheck is when a pending resize next needs a look (its deadline, or the poll interval).
	recheck time.Duration
}

// resizeVerdict reads one pod's resize conditions at now.
func resizeVerdict(pod *corev1.Pod, now time.Time, deferredTimeout, inProgressTimeout time.Duration) resizeOutcome {
	var out resizeOutcome
	for _, c := range pod.Status.Conditions {
		var limit time.Duration
		switch {
		case c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible:
			return resizeOutcome{infeasible: fmt.Sprintf("pod %s cannot be resized in place: %s", pod.Name, c.Message)}
		case c.Type == corev1.PodResizeInProgress && c.Reason == corev1.PodReasonError:
			// The kubelet failed to apply it and says so: no deadline to wait for.
			return resizeOutcome{fallback: fmt.Sprintf("the in-place resize of pod %s failed: %s", pod.Name, c.Message)}
		case c.Type == corev1.PodResizePending:
			limit = deferredTimeout
		case c.Type == corev1.PodResizeInProgress:
			limit = inProgressTimeout
		default:
			continue
		}
		age := now.Sub(c.LastTransitionTime.Time)
		if age >= limit {
			return resizeOutcome{fallback: fmt.Sprintf("the in-place resize of pod %s is %s for %s, past its %s deadline",
				pod.Name, conditionState(c), age.Round(time.Second), limit)}
		}
		out.pending = true
		out.recheck = min(resizePollInterval, limit-age)
	}
	return out
}

func conditionState(c corev1.PodCondition) string {
	if c.Type == corev1.PodResizeInProgress {
		return "in progress"
	}
	if c.Reason != "" {
		return c.Reason
	}
	return "pending"
}

// combine folds the outcome of another pod into o.
func (o resizeOutcome) combine(other resizeOutcome) resizeOutcome {
	if o.fallback == "" {
		o.fallback = other.fallback
	}
	if o.infeasible == "" {
		o.infeasible = other.infeasible
	}
	o.held += other.held
	o.pending = o.pending || other.pending
	if other.recheck > 0 && (o.recheck == 0 || other.recheck < o.recheck) {
		o.recheck = other.recheck
	}
	return o
}

// resizePods resizes the target's running pods in place, through the pods' resize subresource, to the applied
// resources, and reads how their resizes are going. It first reads every pod's verdict and touches no pod when one
// falls back (the template written next rolls them all). A resize that restarts a container (restartsOnResize), and
// the eviction of a pod whose resize cannot fit its node (evictInfeasible), take a serving pod down: they are done
// within the disruption budget (budgetFor), the pods that do not serve first, at no cost.
func (r *Reconciler) resizePods(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target,
	applied []sizerv1alpha1.AppliedResources) (resizeOutcome, error) {
	supported, err := r.resize.check(r.Discovery)
	if err != nil {
		return resizeOutcome{}, err
	}
	if !supported {
		return resizeOutcome{fallback: "this cluster does not resize pods in place (no pods/resize subresource before " +
			"Kubernetes 1.33)"}, nil
	}
	live, err := r.livePods(ctx, wls, t)
	if err != nil {
		return resizeOutcome{}, err
	}
	out, plan := r.planResizes(live, applied)
	if out.fallback != "" || len(plan) == 0 {
		return out, nil
	}
	budget, err := r.restartBudget(ctx, wls, live)
	if err != nil {
		return out, err
	}
	evictions := 0
	for _, s := range plan {
		if s.evict != "" {
			evictions++ // every eviction counts against the bound, of a pod that serves or not
		}
		if s.evict == "" && s.restart == "" || !serving(s.pod) {
			continue
		}
		if budget.none != "" {
			return resizeOutcome{fallback: s.evict + s.restart + "; " + budget.none}, nil
		}
	}
	if evictions > 0 && !r.mayEvict(client.ObjectKeyFromObject(wls).String(), wls.Generation, evictions) {
		return resizeOutcome{fallback: fmt.Sprintf("%s; %d pods were evicted already for resizes that could not fit "+
			"their node", firstEviction(plan), maxInfeasibleEvictions)}, nil
	}
	for _, s := range plan {
		step, err := r.resizeOne(ctx, wls, s, &budget)
		out = out.combine(step)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// livePods are the target's pods that run or are about to, read past the cache, those that do not serve first:
// taking them down costs the workload nothing more.
func (r *Reconciler) livePods(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(wls.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods to resize: %w", err)
	}
	live := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	slices.SortStableFunc(live, func(a, b corev1.Pod) int { return boolCmp(serving(&a), serving(&b)) })
	return live, nil
}

// resizeOne resizes one pod of the plan, or evicts it when its resize cannot fit its node; a serving pod whose
// resize takes it down waits for the disruption budget (held).
func (r *Reconciler) resizeOne(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, s podResize, budget *restartBudget) (resizeOutcome, error) {
	if (s.evict != "" || s.restart != "") && serving(s.pod) && !budget.take(s.pod) {
		return resizeOutcome{held: 1}, nil
	}
	if s.evict != "" {
		held, err := r.evictInfeasible(ctx, wls, s.pod, s.evict)
		if err != nil || !held {
			return resizeOutcome{}, err
		}
		return resizeOutcome{held: 1}, nil
	}
	if err := r.SubResource("resize").Update(ctx, s.pod); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			// e.g. a QoS class change, or a resource that cannot change in place: this pass falls back (the
			// pods it resized already stay so)
			return resizeOutcome{fallback: fmt.Sprintf("the apiserver refuses to resize pod %s in place: %s",
				s.pod.Name, apierrors.ReasonForError(err))}, nil
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return resizeOutcome{}, nil // the pod changed or went; the next pass sees it
		}
		return resizeOutcome{}, fmt.Errorf("resizing pod %s: %w", s.pod.Name, err)
	}
	return resizeOutcome{}, nil
}

// podResize is what a pass does to one pod: resize it (restart says which container that restarts, if any), or
// evict it (evict says why).
type podResize struct {
	pod            *corev1.Pod
	restart, evict string
}

// planResizes reads every pod's verdict and what it needs: a resize to applied, or, when the kubelet reports the
// size it has now cannot fit its node, an eviction.
func (r *Reconciler) planResizes(live []corev1.Pod, applied []sizerv1alpha1.AppliedResources) (resizeOutcome, []podResize) {
	deferred, inProgress := r.ResizeDeferredTimeout, r.ResizeInProgressTimeout
	if deferred == 0 {
		deferred = DefaultResizeDeferredTimeout
	}
	if inProgress == 0 {
		inProgress = DefaultResizeInProgressTimeout
	}
	now := r.now()
	var out resizeOutcome
	var plan []podResize
	waiting := resizeOutcome{pending: true, recheck: resizePollInterval}
	for i := range live {
		pod := &live[i]
		verdict := resizeVerdict(pod, now, deferred, inProgress)
		restart := restartsOnResize(pod, applied)
		// A copy: the budget counts the pods as they are.
		resized := pod.DeepCopy()
		changed := resizeTo(resized, applied)
		infeasible := verdict.infeasible
		verdict.infeasible = ""
		out = out.combine(verdict)
		switch {
		case changed:
			// A new size (one the kubelet found infeasible included: the new one may fit).
			plan = append(plan, podResize{pod: resized, restart: restart})
			out = out.combine(waiting)
		case infeasible != "":
			plan = append(plan, podResize{pod: pod, evict: infeasible})
			out = out.combine(waiting)
		case resizeUnderWay(pod):
			out = out.combine(waiting)
		}
	}
	return out, plan
}

// restartBudget reads the disruption budgets of the namespace (the cache), the pods each selects and the workload's
// strategy and replicas (the apiserver: a pod just taken down must count, and a stale strategy must not turn into a
// fallback that rolls every pod), and makes the restart budget of the target's live pods.
func (r *Reconciler) restartBudget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, live []corev1.Pod) (restartBudget, error) {
	t, err := getTarget(ctx, r.APIReader, wls)
	switch {
	case err != nil:
		return restartBudget{}, fmt.Errorf("reading the workload's strategy: %w", err)
	case t == nil:
		return restartBudget{}, errTargetGone
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &pdbs, client.InNamespace(wls.Namespace)); err != nil {
		return restartBudget{}, fmt.Errorf("listing disruption budgets: %w", err)
	}
	var listErr error
	selected := func(sel labels.Selector) []corev1.Pod {
		var list corev1.PodList
		if err := r.APIReader.List(ctx, &list, client.InNamespace(wls.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			listErr = fmt.Errorf("listing the pods of a disruption budget: %w", err)
		}
		return list.Items
	}
	b := budgetFor(t.obj, t.replicas, pdbs.Items, live, selected)
	return b, listErr
}

// errTargetGone is the workload gone between two reads of one pass.
var errTargetGone = errors.New("the workload is gone")

// firstEviction is the reason of the first eviction of plan.
func firstEviction(plan []podResize) string {
	for _, s := range plan {
		if s.evict != "" {
			return s.evict
		}
	}
	return ""
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// resizeTo sets the applied resources in pod's spec and reports whether anything changed.
func resizeTo(pod *corev1.Pod, applied []sizerv1alpha1.AppliedResources) bool {
	changed := false
	for ci := range pod.Spec.Containers {
		c := &pod.Spec.Containers[ci]
		for _, a := range applied {
			if a.ContainerName != c.Name || resourcesEqual(*c, a) {
				continue
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			for k, v := range a.Requests {
				c.Resources.Requests[k] = v
			}
			if a.Limits != nil {
				if c.Resources.Limits == nil {
					c.Resources.Limits = corev1.ResourceList{}
				}
				for k, v := range a.Limits {
					c.Resources.Limits[k] = v
				}
			}
			changed = true
		}
	}
	return changed
}
