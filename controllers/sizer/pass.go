package sizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// Reconcile is one pass over one WorkloadSizer, in the steps the three controllers share (docs/architecture.md):
// fetch it, start from the status last written, finalize it when it is being deleted, hold it with the finalizer,
// reconcile it (read, decide, act, derive the status), and finish (write the status, tell what changed, say when
// to look again).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wls := &sizerv1alpha1.WorkloadSizer{}
	if err := r.Get(ctx, req.NamespacedName, wls); err != nil {
		return passerr.Gone(err, func() { r.forget(req.String()) })
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("workloadsizer", klog.KObj(wls)))
	// The status this process last wrote is newer than a cache that has not caught up with it: a pass starts from
	// that one and compares with it (see controllers/internal/statuswrite).
	wls.Status = *r.written.Current(wls, &wls.Status)
	if wls.DeletionTimestamp != nil {
		return r.finalize(ctx, wls)
	}
	if err := r.addFinalizer(ctx, wls); err != nil {
		return passResult(fmt.Errorf("adding the finalizer: %w", err))
	}
	return r.finish(ctx, req, wls, r.reconcile(ctx, wls))
}

// outcome is what a pass did: when to look again, the status it derived (nil: none to write), the events that
// status starts, and the pass's error.
type outcome struct {
	result ctrl.Result
	status *sizerv1alpha1.WorkloadSizerStatus
	events []sizerEvent
	err    error
}

// reconcile does the work and returns its outcome: it brings the target and the sizer's children in line with the
// spec (sync), then derives the status from what the pass found and records the events it starts.
func (r *Reconciler) reconcile(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) outcome {
	p := &pass{wls: wls, status: wls.Status.DeepCopy()}
	err := r.sync(ctx, p)
	var result ctrl.Result
	if err == nil {
		// observedGeneration moves only with a pass that did all it was asked: a failed one leaves it, so a
		// client waiting for the generation does not take an error for success.
		p.status.ObservedGeneration = wls.Generation
	} else {
		if passerr.OnlyNamespaceTerminating(err) {
			return outcome{} // the namespace is going: no status worth writing, nothing to look at again
		}
		result, err = passResult(err)
	}
	setConflict(p.status, wls.Generation, p.conflicts)
	setReady(p.status, wls, p.problem, p.workloadReplicas)
	if p.retryLater && err == nil {
		result.RequeueAfter = retryInterval
	}
	if p.recheck > 0 && err == nil && (result.RequeueAfter == 0 || p.recheck < result.RequeueAfter) {
		result.RequeueAfter = p.recheck
	}
	events := r.recordEvents(ctx, wls, wls.Status, *p.status, p.createdTarget)
	return outcome{result: result, status: p.status, events: events, err: err}
}

// finish ends a pass: it writes the status the pass derived (unless only counts moved moments after the last
// write), counts the events it started once written, and says when to look again.
func (r *Reconciler) finish(ctx context.Context, req ctrl.Request, wls *sizerv1alpha1.WorkloadSizer, out outcome) (ctrl.Result, error) {
	result, err := out.result, out.err
	if out.status == nil || equality.Semantic.DeepEqual(&wls.Status, out.status) {
		return result, err
	}
	now := r.now()
	if wait := r.pacer.Wait(req.String(), now); wait > 0 && !statusUrgent(wls.Status, *out.status) {
		if result.RequeueAfter == 0 || wait < result.RequeueAfter {
			result.RequeueAfter = wait
		}
		return result, err // only counts moved, moments after the last write
	}
	if serr := r.writeStatus(ctx, wls, *out.status); apierrors.IsNotFound(serr) {
		// Deleted since it was read: no status to write, nothing to look at again.
		r.forget(req.String())
		return ctrl.Result{}, nil
	} else if serr != nil {
		err = errors.Join(err, serr)
	} else {
		r.pacer.Wrote(req.String(), now)
		// Counted once the status that starts them is written: a pass whose write fails leaves the old
		// status, and the next pass sees the same transition again.
		countEvents(out.events)
	}
	return result, err
}

// sync brings the target and the sizer's children in line with the spec, and fills the pass's status in.
func (r *Reconciler) sync(ctx context.Context, p *pass) error {
	wls, st, g := p.wls, p.status, p.wls.Generation
	ref := wls.Target()
	if c, err := r.anotherSizer(ctx, wls); err != nil {
		return err
	} else if c != nil {
		p.conflicts = append(p.conflicts, *c)
		st.Resources, st.DisruptionBudget = nil, nil
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonAnotherSizer, c.message)
		return r.standDown(ctx, wls)
	}
	t, err := r.readTarget(ctx, wls)
	if err != nil {
		return fmt.Errorf("reading the target: %w", err)
	}
	if t == nil {
		st.Replicas, st.ReadyReplicas, st.Selector, st.Pods, st.PodCount = 0, 0, "", nil, 0
		st.DisruptionBudget = nil
		if wls.Spec.Template == nil && wls.Spec.Image == "" {
			setCondition(st, g, sizerv1alpha1.ConditionTargetFound, false, sizerv1alpha1.ReasonTargetNotFound, fmt.Sprintf(
				"%s %s does not exist in namespace %s; create it, or give spec.image or spec.template so the sizer "+
					"creates it", ref.Kind, ref.Name, wls.Namespace))
			setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonTargetNotFound, "nothing to size")
			return nil // the target's creation wakes the sizer up
		}
		patches, applied := patchesFor(wls, createdTemplate(wls), nil, true, true)
		w, err := createdWrite(wls, nil, wls.Spec.Size, patches)
		if err == nil {
			err = r.writeTarget(ctx, wls, nil, w)
		}
		if err != nil {
			setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonApplyFailed, err.Error())
			return fmt.Errorf("creating %s %s: %w", ref.Kind, ref.Name, err)
		}
		p.createdTarget = true
		st.Resources = applied
		setCondition(st, g, sizerv1alpha1.ConditionTargetFound, true, sizerv1alpha1.ReasonCreated, fmt.Sprintf("created %s %s", ref.Kind, ref.Name))
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonRollingOut, "the target was just created")
		return nil
	}

	reason := sizerv1alpha1.ReasonFound
	if t.created {
		reason = sizerv1alpha1.ReasonCreated
	}
	setCondition(st, g, sizerv1alpha1.ConditionTargetFound, true, reason, fmt.Sprintf("%s %s", ref.Kind, ref.Name))
	var errs []error
	controlled := controlledElsewhere(t, ref.Kind)
	if controlled != nil {
		// Nothing is written to the workload; the sizer's own budget, Service and Ingress stay as they are.
		p.conflicts = append(p.conflicts, *controlled)
		st.Resources = nil
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonTargetControlled, controlled.message)
		if err := r.releaseWorkload(ctx, wls); err != nil {
			errs = append(errs, err)
		}
	} else {
		p.problem, p.workloadReplicas = t.problem, &t.replicas
		if err := r.size(ctx, p, t); err != nil {
			errs = append(errs, err)
		}
	}
	replicas := t.replicas
	if controlled == nil && wls.Spec.Size != nil && !p.autoscaled {
		replicas = *wls.Spec.Size
	}
	if err := r.syncBudget(ctx, p, t, replicas); err != nil {
		errs = append(errs, err)
	}
	if err := r.syncExpose(ctx, p, t); err != nil {
		errs = append(errs, err)
	}
	if err := r.observe(ctx, wls, t, st); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// readTarget reads the target from the cache and, when the cache does not have it, from the apiserver: a
// workload someone created a moment ago must be found, not created over.
func (r *Reconciler) readTarget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) (*target, error) {
	t, err := getTarget(ctx, r.Client, wls)
	if err == nil && t == nil {
		t, err = getTarget(ctx, r.APIReader, wls)
	}
	if err != nil || t == nil || !orphanOf(t.obj, wls) || (wls.Spec.Template == nil && wls.Spec.Image == "") {
		return t, err
	}
	// A workload this sizer created, orphaned (its previous sizer deleted with --cascade=orphan): its own again. A
	// sizer that would not create its target (neither template nor image) sizes it as the user's instead.
	if err := r.adopt(ctx, wls, t.obj); err != nil {
		return nil, err
	}
	t.created = true
	return t, nil
}

// size writes replicas, resources and environment to the target as the update mode says, and sets Sized and the
// conflicts it meets.
func (r *Reconciler) size(ctx context.Context, p *pass, t *target) error {
	wls, st, g := p.wls, p.status, p.wls.Generation
	mode := wls.Spec.UpdateMode
	if mode == "" {
		mode = sizerv1alpha1.UpdateModeRolling
	}
	toTemplate := mode == sizerv1alpha1.UpdateModeRolling || t.created
	owned, err := r.sizedFields(ctx, wls, t, toTemplate)
	if err != nil {
		return err
	}
	source := t.template
	if t.created {
		// A created target is the sizer's template: its requests and runtime values are decided from the limits the
		// apply will hold, not from the previous apply's (a limit lowered in spec.template would otherwise keep a
		// request above it, refused, or a GOMEMLIMIT above it for a rollout).
		source = createdTemplate(wls)
	}
	patches, applied := patchesFor(wls, source, owned.env, toTemplate, toTemplate)
	st.Resources = applied

	// In place: resize the running pods; when a resize is infeasible, refused or past its deadline, fall back to
	// the template.
	var resize resizeOutcome
	if mode == sizerv1alpha1.UpdateModeInPlace && !t.created && len(applied) > 0 {
		if resize, err = r.resizePods(ctx, wls, t, applied); err != nil {
			setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonApplyFailed, err.Error())
			return err
		}
		if resize.fallback != "" {
			patches, _ = patchesFor(wls, t.template, owned.env, true, false)
		} else if resize.pending {
			p.recheck = resize.recheck
		}
	}

	replicas, err := r.replicasFor(ctx, p)
	if err != nil {
		return err
	}
	var w targetWrite
	if t.created {
		if w, err = createdWrite(wls, t, replicas, patches); err != nil {
			return err
		}
	} else {
		w = workloadWrite(wls, t, replicas, patches)
	}
	if err := r.writeTarget(ctx, wls, t, w); err != nil {
		return sizeFailed(p, err)
	}
	setSized(st, g, unknownContainers(wls.Spec.Resources, t.template.Spec.Containers), mode == sizerv1alpha1.UpdateModeOff && !t.created, resize)
	return nil
}

// sizedFields are the fields the sizer owns on the target before this pass's write: its field manager's (the
// created target's, or the sizer's own on a user's workload), and those of its last apply in this process. With
// toTemplate, it first takes back the runtime variables it derived that another manager holds.
func (r *Reconciler) sizedFields(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target, toTemplate bool) (fieldSet, error) {
	owner := workloadFieldOwner(wls)
	if t.created {
		owner = FieldOwner
	}
	owned := ownedFields(t.obj, owner, FieldOwner).union(r.lastApplied(client.ObjectKeyFromObject(wls).String()))
	if t.created && wls.Spec.Template != nil {
		// The sizer applies all of a target it created, the user's own variables from spec.template included:
		// those are the user's all the same, and runtime tuning must leave them as written.
		for _, c := range wls.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				delete(owned.env[c.Name], e.Name)
			}
		}
	}
	if toTemplate {
		if err := r.reclaimRuntimeEnv(ctx, wls, t, &owned); err != nil {
			return owned, err
		}
	}
	return owned, nil
}

// replicasFor is the replica count to write: spec.size, or none when a HorizontalPodAutoscaler scales the target
// (handed over to it with its current value). An autoscaler of either kind is reported as a conflict.
func (r *Reconciler) replicasFor(ctx context.Context, p *pass) (*int32, error) {
	replicas := p.wls.Spec.Size
	if c, err := r.autoscalerConflict(ctx, p.wls); err != nil {
		return nil, err
	} else if c != nil {
		p.conflicts = append(p.conflicts, *c)
		p.autoscaled = true
		replicas = nil
	}
	if c, err := r.verticalAutoscalerConflict(ctx, p.wls); err != nil {
		// Only a report: a failed look stops no sizing.
		log.FromContext(ctx).Error(err, "Looking for vertical pod autoscalers of the workload")
	} else if c != nil {
		p.conflicts = append(p.conflicts, *c) // reported; the sizer's resources are the user's ask all the same
	}
	return replicas, nil
}

// sizeFailed reports a failed write of the target: fields another manager owns are a state (the Conflict
// condition), not an error to retry; any other refusal is ApplyFailed, and a write that raced another is retried.
func sizeFailed(p *pass, err error) error {
	st, g := p.status, p.wls.Generation
	if msg := conflictMessage(err); msg != "" {
		var fight fightError
		if errors.As(err, &fight) {
			p.conflicts = append(p.conflicts, conflict{reason: sizerv1alpha1.ReasonTakenBack, message: fmt.Sprintf(
				"%s; these fields were taken back %d times after the sizer forced them: it stopped "+
					"forcing until its spec changes (make one of the two writers let go)", msg, fightLimit)})
		} else {
			p.conflicts = append(p.conflicts, conflict{reason: sizerv1alpha1.ReasonConflict, message: msg +
				"; the sizer leaves these fields alone (set spec.forceOwnership to take them over)"})
		}
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonConflict, "fields the sizer would write are owned by "+
			"another manager: see the Conflict condition")
		return nil // a conflict is a state to report, not an error to retry
	}
	if !apierrors.IsConflict(err) {
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonApplyFailed, err.Error())
	}
	return err
}

// setSized sets the Sized condition of a pass whose write went through: a resources entry that names no container
// (unknown), updateMode Off on a workload the sizer did not create (off), an in-place resize that fell back or waits.
func setSized(st *sizerv1alpha1.WorkloadSizerStatus, g int64, unknown string, off bool, resize resizeOutcome) {
	switch {
	case unknown != "":
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonContainerNotFound, unknown)
	case off:
		setCondition(st, g, sizerv1alpha1.ConditionSized, true, sizerv1alpha1.ReasonModeOff, "replicas applied; resources are reported, not written (updateMode Off leaves running pods alone)")
	case resize.fallback != "":
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonInPlaceFallback, resize.fallback+
			": falling back to a rolling update of the template")
	case resize.pending && resize.held > 0:
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonResizing, fmt.Sprintf("pods are being "+
			"resized in place; %d wait for the disruption budget (their resize restarts a container)", resize.held))
	case resize.pending:
		setCondition(st, g, sizerv1alpha1.ConditionSized, false, sizerv1alpha1.ReasonResizing, "pods are being resized in place")
	default:
		setCondition(st, g, sizerv1alpha1.ConditionSized, true, sizerv1alpha1.ReasonApplied, "replicas, resources and environment are applied")
	}
}

// reclaimRuntimeEnv counts as the sizer's the runtime variables of its languages that nobody owns: variables it
// handed over when it stopped writing them (another update mode, a language removed) and now writes again. Without
// this, a variable it once let go would stay at its old value for good, as if a user had set it. Whether anybody
// owns a variable is in the apiserver's copy (the cache keeps only the sizers' managedFields), read only when such a
// variable is there, and once per generation of the workload: ownership of a variable moves with a spec write
// (which bumps the generation) or with the sizer's own hand-over (which forgets the answer), not with the status
// writes of a rollout.
func (r *Reconciler) reclaimRuntimeEnv(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target, owned *fieldSet) error {
	names := runtimeVariables(wls.Spec.Runtime)
	unsure := false
	for _, c := range t.template.Spec.Containers {
		for _, e := range c.Env {
			if slices.Contains(names, e.Name) && !owned.env[c.Name][e.Name] && e.ValueFrom == nil {
				unsure = true
			}
		}
	}
	if !unsure {
		return nil
	}
	key := client.ObjectKeyFromObject(wls).String()
	generation := t.obj.GetGeneration()
	unowned, ok := r.unownedEnvOf(key, generation)
	if !ok {
		live, err := getTarget(ctx, r.APIReader, wls)
		if err != nil || live == nil {
			return err
		}
		withOwners := envWithOwners(live.obj)
		unowned = fieldSet{}
		for _, c := range live.template.Spec.Containers {
			for _, e := range c.Env {
				if slices.Contains(names, e.Name) && !withOwners[c.Name][e.Name] {
					unowned.addEnv(c.Name, e.Name)
				}
			}
		}
		r.rememberUnownedEnv(key, generation, unowned)
	}
	*owned = owned.union(unowned)
	return nil
}

// observe fills in the target's counts, selector and pods.
func (r *Reconciler) observe(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target, st *sizerv1alpha1.WorkloadSizerStatus) error {
	st.Replicas, st.ReadyReplicas = t.statusReplica, t.ready
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return fmt.Errorf("the target's selector: %w", err)
	}
	st.Selector = sel.String()
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.List(ctx, &pods, client.InNamespace(wls.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	st.PodCount = int32(len(names))
	st.Pods = names[:min(len(names), maxPodsListed)]
	if len(st.Pods) == 0 {
		st.Pods = nil
	}
	return nil
}
