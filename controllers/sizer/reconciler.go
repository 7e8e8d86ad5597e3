// Package sizer is the controller behind Keelson's WorkloadSizer. Reconcile reads the sizer and its target,
// creates the target when asked to, applies only the fields the sizer owns (replicas, the resources and runtime
// environment it controls) with server-side apply, resizes pods in place when asked, keeps a disruption budget
// that cannot block drains by accident, exposes the target, and writes the status once.
package sizer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/statuspace"
)

// Finalizer lets the sizer release the fields it owns on a target it did not create before the sizer goes.
const Finalizer = "sizer.keelson.dev/release"

// maxPodsListed caps status.pods.
const maxPodsListed = 100

// Condition types and reasons.
const (
	ConditionReady        = "Ready"
	ConditionTargetFound  = "TargetFound"
	ConditionSized        = "Sized"
	ConditionConflict     = "Conflict"
	ConditionBudgetSafe   = "DisruptionBudgetSafe"
	ReasonFound           = "Found"
	ReasonCreated         = "Created"
	ReasonTargetNotFound  = "TargetNotFound"
	ReasonApplied         = "Applied"
	ReasonRollingOut      = "RollingOut"
	ReasonResizing        = "ResizingInPlace"
	ReasonInPlaceFallback = "InPlaceInfeasible"
	ReasonModeOff         = "UpdateModeOff"
	ReasonConflict        = "FieldOwnedByAnotherManager"
	ReasonNoConflict      = "NoConflict"
	ReasonReady           = "Ready"
	ReasonNotReady        = "NotReady"
)

// Reconciler reconciles WorkloadSizers.
type Reconciler struct {
	client.Client
	// APIReader reads pods directly from the apiserver for in-place resizes (the cache holds only pod metadata).
	APIReader client.Reader
	// pacer spaces out status writes whose only news is counts (see statusUrgent).
	pacer *statuspace.Pacer
}

// RBAC of the workload-sizer (make manifests turns these into its ClusterRole).
// +kubebuilder:rbac:groups=sizer.keelson.dev,resources=workloadsizers,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=sizer.keelson.dev,resources=workloadsizers/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=update
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// Reconcile brings one WorkloadSizer's target to its declared size and writes the sizer's status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wls := &sizerv1alpha1.WorkloadSizer{}
	if err := r.Get(ctx, req.NamespacedName, wls); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("workloadsizer", klog.KObj(wls)))
	if wls.DeletionTimestamp != nil {
		r.pacer.Forget(req.String())
		return ctrl.Result{}, r.release(ctx, wls)
	}
	if controllerutil.AddFinalizer(wls, Finalizer) {
		if err := r.Update(ctx, wls); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	status := wls.Status.DeepCopy()
	status.ObservedGeneration = wls.Generation
	err := r.reconcile(ctx, wls, status)
	setReady(status, wls)
	if !equality.Semantic.DeepEqual(&wls.Status, status) {
		now := time.Now()
		if wait := r.pacer.Wait(req.String(), now); wait > 0 && !statusUrgent(wls.Status, *status) {
			return ctrl.Result{RequeueAfter: wait}, err // only counts moved, moments after the last write
		}
		wls.Status = *status
		if serr := r.Status().Update(ctx, wls); serr != nil {
			err = errors.Join(err, fmt.Errorf("writing status: %w", serr))
		} else {
			r.pacer.Wrote(req.String(), now)
		}
	}
	return ctrl.Result{}, err
}

func setCondition(st *sizerv1alpha1.WorkloadSizerStatus, t string, ok bool, reason, message string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message,
		ObservedGeneration: st.ObservedGeneration})
}

// reconcile does the work and fills status in.
func (r *Reconciler) reconcile(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, st *sizerv1alpha1.WorkloadSizerStatus) error {
	ref := wls.Spec.TargetRef
	t, err := getTarget(ctx, r.Client, wls)
	if err != nil {
		return fmt.Errorf("reading the target: %w", err)
	}
	if t == nil {
		st.Replicas, st.ReadyReplicas, st.Selector, st.Pods, st.PodCount = 0, 0, "", nil, 0
		if wls.Spec.Template == nil && wls.Spec.Image == "" {
			setCondition(st, ConditionTargetFound, false, ReasonTargetNotFound, fmt.Sprintf(
				"%s %s does not exist in namespace %s; create it, or give spec.image or spec.template so the sizer "+
					"creates it", ref.Kind, ref.Name, wls.Namespace))
			setCondition(st, ConditionSized, false, ReasonTargetNotFound, "nothing to size")
			return nil // the target's creation wakes the sizer up
		}
		template := createdTemplate(wls)
		patches, applied := patchesFor(wls, template, nil, true, true)
		if err := r.createTarget(ctx, wls, patches); err != nil {
			return fmt.Errorf("creating %s %s: %w", ref.Kind, ref.Name, err)
		}
		st.Resources = applied
		setCondition(st, ConditionTargetFound, true, ReasonCreated, fmt.Sprintf("created %s %s", ref.Kind, ref.Name))
		setCondition(st, ConditionSized, false, ReasonRollingOut, "the target was just created")
		return nil
	}

	reason := ReasonFound
	if t.created {
		reason = ReasonCreated
	}
	setCondition(st, ConditionTargetFound, true, reason, fmt.Sprintf("%s %s", ref.Kind, ref.Name))

	var errs []error
	if err := r.size(ctx, wls, t, st); err != nil {
		errs = append(errs, err)
	}
	replicas := t.replicas
	if wls.Spec.Size != nil {
		replicas = *wls.Spec.Size
	}
	if err := r.syncBudget(ctx, wls, t.selector, replicas, st); err != nil {
		errs = append(errs, err)
	}
	if err := r.syncExpose(ctx, wls, t.template.Labels); err != nil {
		errs = append(errs, err)
	}
	if err := r.observe(ctx, wls, t, st); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// size writes replicas, resources and environment to the target as the update mode says, and sets Sized and
// Conflict.
func (r *Reconciler) size(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target, st *sizerv1alpha1.WorkloadSizerStatus) error {
	mode := wls.Spec.UpdateMode
	if mode == "" {
		mode = sizerv1alpha1.UpdateModeRolling
	}
	toTemplate := mode == sizerv1alpha1.UpdateModeRolling || t.created
	patches, applied := patchesFor(wls, t.template, ownedEnv(t.obj), toTemplate, toTemplate)
	st.Resources = applied

	// In place: resize the running pods; when a resize is infeasible, fall back to the template.
	inPlacePending, fellBack := false, false
	if mode == sizerv1alpha1.UpdateModeInPlace && !t.created && len(applied) > 0 {
		pending, infeasible, err := r.resizePods(ctx, wls, t, applied)
		if err != nil {
			return err
		}
		inPlacePending, fellBack = pending, infeasible
		if fellBack {
			patches, _ = patchesFor(wls, t.template, ownedEnv(t.obj), true, false)
		}
	}

	replicasDiffer := wls.Spec.Size != nil && *wls.Spec.Size != t.replicas
	if t.created {
		// The sizer owns all of a target it created: it always applies the whole object (a partial apply by the
		// same manager would remove the fields it leaves out), and only when something changed.
		if replicasDiffer || templateNeedsWrite(t.template, patches) || t.obj.GetAnnotations()[specHashAnnotation] != createdHash(wls, patches) {
			if err := r.createTarget(ctx, wls, patches); err != nil {
				return err
			}
		}
	} else if replicasDiffer || templateNeedsWrite(t.template, patches) {
		if err := r.applyTarget(ctx, wls, patches); err != nil {
			if msg := conflictMessage(err); msg != "" {
				setCondition(st, ConditionConflict, true, ReasonConflict, msg+
					"; the sizer leaves these fields alone (set spec.forceOwnership to take them over)")
				setCondition(st, ConditionSized, false, ReasonConflict, "fields the sizer would write are owned by "+
					"another manager: see the Conflict condition")
				return nil // a conflict is a state to report, not an error to retry
			}
			return err
		}
	}
	setCondition(st, ConditionConflict, false, ReasonNoConflict, "the sizer owns every field it writes")
	switch {
	case mode == sizerv1alpha1.UpdateModeOff && !t.created:
		setCondition(st, ConditionSized, true, ReasonModeOff,
			"replicas applied; resources are reported, not written (updateMode Off leaves running pods alone)")
	case fellBack:
		setCondition(st, ConditionSized, false, ReasonInPlaceFallback,
			"a pod cannot be resized in place (the node lacks room, or the resize policy forbids it): falling "+
				"back to a rolling update of the template")
	case inPlacePending:
		setCondition(st, ConditionSized, false, ReasonResizing, "pods are being resized in place")
	default:
		setCondition(st, ConditionSized, true, ReasonApplied, "replicas, resources and environment are applied")
	}
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

// setReady sums the conditions up.
func setReady(st *sizerv1alpha1.WorkloadSizerStatus, wls *sizerv1alpha1.WorkloadSizer) {
	for _, t := range []string{ConditionTargetFound, ConditionSized} {
		if c := meta.FindStatusCondition(st.Conditions, t); c == nil || c.Status != metav1.ConditionTrue {
			msg := t + " is not True"
			if c != nil {
				msg = c.Message
			}
			setCondition(st, ConditionReady, false, ReasonNotReady, msg)
			return
		}
	}
	if wls.Spec.Size != nil && st.ReadyReplicas < *wls.Spec.Size {
		setCondition(st, ConditionReady, false, ReasonNotReady,
			fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, *wls.Spec.Size))
		return
	}
	setCondition(st, ConditionReady, true, ReasonReady, fmt.Sprintf("%d replicas ready", st.ReadyReplicas))
}

// release runs when the sizer is deleted: a target it created goes with it (garbage collection); on a target it
// did not create, its managedFields entry is dropped, so the values stay as they are and no longer belong to
// anyone in particular. Then the finalizer goes.
func (r *Reconciler) release(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) error {
	if !controllerutil.ContainsFinalizer(wls, Finalizer) {
		return nil
	}
	// Read the target from the apiserver: the cache keeps only the sizer's own managedFields entry.
	t, err := getTarget(ctx, r.APIReader, wls)
	if err != nil {
		return err
	}
	if t != nil && !t.created {
		if remaining, found := withoutOurEntry(t.obj); found && len(remaining) > 0 {
			patch := client.MergeFrom(t.obj.DeepCopyObject().(client.Object))
			t.obj.SetManagedFields(remaining)
			if err := r.Patch(ctx, t.obj, patch); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("releasing the sizer's fields on %s: %w", t.obj.GetName(), err)
			}
		}
	}
	controllerutil.RemoveFinalizer(wls, Finalizer)
	return r.Update(ctx, wls)
}

// syncBudget keeps the PodDisruptionBudget the decision asks for, and only that.
func (r *Reconciler) syncBudget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, selector *metav1.LabelSelector,
	replicas int32, st *sizerv1alpha1.WorkloadSizerStatus) error {
	d := decidePDB(wls.Spec.Disruption, replicas)
	setCondition(st, ConditionBudgetSafe, d.safe, d.reason, d.message)
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	var existing policyv1.PodDisruptionBudget
	err := r.Get(ctx, key, &existing)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	exists := err == nil && metav1.IsControlledBy(&existing, wls)
	if !d.create {
		st.DisruptionBudget = nil
		if exists {
			return client.IgnoreNotFound(r.Delete(ctx, &existing))
		}
		return nil
	}
	if !exists || !budgetMatches(&existing, selector, d) {
		if err := r.Apply(ctx, newPDB(wls, selector, d), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying the disruption budget: %w", err)
		}
	}
	st.DisruptionBudget = &sizerv1alpha1.DisruptionBudgetStatus{Name: key.Name, DisruptionsAllowed: existing.Status.DisruptionsAllowed}
	return nil
}

func budgetMatches(pdb *policyv1.PodDisruptionBudget, selector *metav1.LabelSelector, d pdbDecision) bool {
	return equality.Semantic.DeepEqual(pdb.Spec.Selector, selector) &&
		equality.Semantic.DeepEqual(pdb.Spec.MinAvailable, d.minAvailable) &&
		equality.Semantic.DeepEqual(pdb.Spec.MaxUnavailable, d.maxUnavailable) &&
		pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
}

// syncExpose keeps the Service and Ingress the spec asks for, and deletes the ones it no longer asks for.
func (r *Reconciler) syncExpose(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, podLabels map[string]string) error {
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	wantService := wls.Spec.Expose != nil && wls.Spec.Expose.Service != nil && wls.Spec.Expose.Service.Enabled
	wantIngress := wantService && wls.Spec.Expose.Ingress != nil && wls.Spec.Expose.Ingress.Enabled

	var svc corev1.Service
	if err := r.Get(ctx, key, &svc); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil && !metav1.IsControlledBy(&svc, wls) {
		svc = corev1.Service{} // someone else's Service of that name: never touched
	}
	switch {
	case wantService && (svc.UID == "" || !serviceMatches(&svc, wls, podLabels)):
		if err := r.Apply(ctx, newService(wls, podLabels), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying the Service: %w", err)
		}
	case !wantService && svc.UID != "":
		if err := r.Delete(ctx, &svc); client.IgnoreNotFound(err) != nil {
			return err
		}
	}

	var ing networkingv1.Ingress
	if err := r.Get(ctx, key, &ing); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil && !metav1.IsControlledBy(&ing, wls) {
		ing = networkingv1.Ingress{}
	}
	switch {
	case wantIngress && (ing.UID == "" || ing.Annotations[specHashAnnotation] != ingressHash(wls)):
		ac := newIngress(wls).WithAnnotations(map[string]string{specHashAnnotation: ingressHash(wls)})
		if err := r.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying the Ingress: %w", err)
		}
	case !wantIngress && ing.UID != "":
		if err := r.Delete(ctx, &ing); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func serviceMatches(svc *corev1.Service, wls *sizerv1alpha1.WorkloadSizer, podLabels map[string]string) bool {
	s := wls.Spec.Expose.Service
	target := s.TargetPort
	if target == 0 {
		target = s.Port
	}
	return equality.Semantic.DeepEqual(svc.Spec.Selector, podLabels) && svc.Spec.Type == s.Type &&
		len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == s.Port && svc.Spec.Ports[0].TargetPort.IntVal == target
}
