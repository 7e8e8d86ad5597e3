package pipeline

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/conditions"
)

// finalize deletes a pipeline in order: its step workloads, then its claim, then its volume; each stage waits until
// the previous one is gone. A stage whose objects are already gone is done, so deletion never hangs on an object
// someone else removed. The status says what it waits for. A pipeline deleted with --cascade=orphan deletes
// nothing: its objects stay, the garbage collector takes the pipeline's references off them, and the pipeline
// applied again adopts them (orphanOf).
func (r *Reconciler) finalize(ctx context.Context, p *inferencev1alpha1.Pipeline) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(p, inferencev1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	var waiting string
	if !controllerutil.ContainsFinalizer(p, metav1.FinalizerOrphanDependents) {
		var err error
		if waiting, err = r.deleteStage(ctx, p); err != nil {
			return passResult(err)
		}
	}
	if waiting != "" {
		if p.Status.Phase != inferencev1alpha1.PhaseDeleting || stepsMessage(p) != waiting {
			p.Status.Phase = inferencev1alpha1.PhaseDeleting
			setDeletingMessage(p, waiting)
			if err := r.writeStatus(ctx, p, p.Status); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: deletionPoll}, nil
	}
	before := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, inferencev1alpha1.Finalizer)
	// A conflict (another writer moved the pipeline since it was read) is a requeue: the next pass reads it again.
	return passResult(client.IgnoreNotFound(r.patchFinalizers(ctx, p, before)))
}

// patchFinalizers writes p's finalizers, and nothing else, as a merge patch from before, under before's
// resourceVersion (another writer's finalizer is not dropped: a race is a conflict). An update would send the
// whole object as this controller's types serialise it, and a spec stored another way (an empty list that the
// types omit, written while the webhook was down) would then fail the spec's validation: the finalizer could never
// be added, or removed.
func (r *Reconciler) patchFinalizers(ctx context.Context, p, before *inferencev1alpha1.Pipeline) error {
	return r.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// deleteStage deletes the first stage that still has objects and says what it waits for ("" when all are gone).
// It reads from the API, not the cache: a pipeline deleted just after its volume was created must not take "not in
// the cache yet" for "already gone" and drop its finalizer, leaking the cluster-scoped volume.
func (r *Reconciler) deleteStage(ctx context.Context, p *inferencev1alpha1.Pipeline) (string, error) {
	sel := client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name}
	var deps appsv1.DeploymentList
	var svcs corev1.ServiceList
	if err := r.reader().List(ctx, &deps, client.InNamespace(p.Namespace), sel); err != nil {
		return "", fmt.Errorf("listing step Deployments: %w", err)
	}
	if err := r.reader().List(ctx, &svcs, client.InNamespace(p.Namespace), sel); err != nil {
		return "", fmt.Errorf("listing step Services: %w", err)
	}
	var steps []client.Object
	for i := range deps.Items {
		steps = append(steps, &deps.Items[i])
	}
	for i := range svcs.Items {
		steps = append(steps, &svcs.Items[i])
	}
	n := 0
	for _, obj := range steps {
		if !ownedBy(obj, p) {
			continue // labelled like ours but someone else's: not ours to delete
		}
		n++
		// Background: the claim's in-use protection keeps it until the last pod that mounts it is gone.
		if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("deleting %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
	}
	if n > 0 {
		return fmt.Sprintf("waiting for %d step Deployments and Services to be deleted", n), nil
	}
	if p.Spec.ModelStorage.Type != inferencev1alpha1.StorageNFS {
		return "", nil // the user's claim is theirs: nothing of ours to delete
	}
	var claim corev1.PersistentVolumeClaim
	switch err := r.reader().Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ClaimName(p)}, &claim); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("reading the models claim %s: %w", ClaimName(p), err)
	case ownedBy(&claim, p): // a claim of that name that is not ours (NameTaken) is left alone
		if claim.DeletionTimestamp == nil {
			if err := r.Delete(ctx, &claim); client.IgnoreNotFound(err) != nil {
				return "", err
			}
		}
		return fmt.Sprintf("waiting for the models claim %s to be deleted (finalizers: %v)", claim.Name, claim.Finalizers), nil
	}
	// The volumes labelled with the pipeline's name and namespace: PVName, or the volume of a claim it adopted.
	var volumes corev1.PersistentVolumeList
	if err := r.reader().List(ctx, &volumes, client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name,
		NamespaceLabel: p.Namespace}); err != nil {
		return "", fmt.Errorf("listing the models volumes: %w", err)
	}
	for i := range volumes.Items {
		pv := &volumes.Items[i]
		kept, err := r.boundElsewhere(ctx, pv, p)
		if err != nil {
			return "", err
		}
		if kept {
			continue
		}
		if pv.DeletionTimestamp == nil {
			if err := r.Delete(ctx, pv); client.IgnoreNotFound(err) != nil {
				return "", err
			}
		}
		return fmt.Sprintf("waiting for the models volume %s to be deleted (finalizers: %v)", pv.Name, pv.Finalizers), nil
	}
	return "", nil
}

// boundElsewhere reports whether a volume labelled as p's is bound to a claim that is there and not p's: a claim
// orphaned by a delete with --cascade=orphan (the garbage collector may finish before this pass sees its finalizer),
// or someone else's. Such a volume stays with its claim; deleting it would only wait for the claim for good.
func (r *Reconciler) boundElsewhere(ctx context.Context, pv *corev1.PersistentVolume, p *inferencev1alpha1.Pipeline) (bool, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return false, nil
	}
	var claim corev1.PersistentVolumeClaim
	switch err := r.reader().Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &claim); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the claim of the models volume %s: %w", pv.Name, err)
	}
	return (ref.UID == "" || claim.UID == ref.UID) && !ownedBy(&claim, p), nil
}

func stepsMessage(p *inferencev1alpha1.Pipeline) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, inferencev1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}

func setDeletingMessage(p *inferencev1alpha1.Pipeline, msg string) {
	conditions.Set(&p.Status.Conditions, metav1.Condition{Type: inferencev1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: inferencev1alpha1.ReasonDeleting, Message: msg, ObservedGeneration: p.Generation})
}

// addFinalizer holds the pipeline with its finalizer, so that its deletion waits for the ordered deletion
// (finalize).
func (r *Reconciler) addFinalizer(ctx context.Context, p *inferencev1alpha1.Pipeline) error {
	before := p.DeepCopy()
	if !controllerutil.AddFinalizer(p, inferencev1alpha1.Finalizer) {
		return nil
	}
	return r.patchFinalizers(ctx, p, before)
}
