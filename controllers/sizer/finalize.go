package sizer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/managedfields"
)

// standDown makes a sizer that another one outranks on the same workload let go of everything it may have written
// before it knew (two creations racing past admission): its fields on the workload, handed over with their values,
// and its own budget, Service and Ingress.
func (r *Reconciler) standDown(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) error {
	if err := r.releaseWorkload(ctx, wls); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	for _, obj := range []client.Object{&policyv1.PodDisruptionBudget{}, &corev1.Service{}, &networkingv1.Ingress{}} {
		if err := r.Get(ctx, key, obj); client.IgnoreNotFound(err) != nil {
			return err
		} else if err == nil && metav1.IsControlledBy(obj, wls) {
			if err := deleteOurs(ctx, r.Client, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseWorkload hands over, with their values, the fields of a workload the sizer did not create that it still
// owns (written before it had to stop writing there), so that nothing of it stays the sizer's.
func (r *Reconciler) releaseWorkload(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) error {
	t, err := getTarget(ctx, r.Client, wls)
	if err != nil {
		return err
	}
	if t == nil || t.created || ownedFields(t.obj, workloadFieldOwner(wls)).empty() {
		return nil
	}
	// Read live: the hand-over needs the apiserver's managedFields, which the cache keeps only for the sizers.
	live, err := getTarget(ctx, r.APIReader, wls)
	if err != nil || live == nil {
		return err
	}
	// Derived variables go (dropDerived hands the rest over first); with none, the rest is handed over.
	if dropped, err := r.dropDerived(ctx, wls, live); err != nil || dropped {
		return err
	}
	return r.handOverFields(ctx, wls, workloadFieldOwner(wls), fieldSet{}, false)
}

// release runs when the sizer is deleted: a target it created goes with it (garbage collection); on a target it
// did not create, its managedFields entry is dropped, so the values stay as they are and no longer belong to
// anyone in particular. Then the finalizer goes.
func (r *Reconciler) release(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) error {
	if !controllerutil.ContainsFinalizer(wls, sizerv1alpha1.Finalizer) {
		return nil
	}
	// Read the target from the apiserver: the cache keeps only the sizers' own managedFields entries.
	t, err := getTarget(ctx, r.APIReader, wls)
	if err != nil {
		return err
	}
	if t != nil && !t.created {
		dropped, err := r.dropDerived(ctx, wls, t)
		if err != nil {
			return err
		}
		if dropped {
			if t, err = getTarget(ctx, r.APIReader, wls); err != nil || t == nil {
				return err
			}
		}
		managers := []string{workloadFieldOwner(wls)}
		if c, err := r.anotherSizer(ctx, wls); err != nil {
			return err
		} else if c == nil {
			managers = append(managers, FieldOwner) // no other sizer could have written the shared entry
		}
		if remaining, found := managedfields.Without(t.obj.GetManagedFields(), managers...); found && len(remaining) > 0 {
			patch := client.MergeFromWithOptions(t.obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
			t.obj.SetManagedFields(remaining)
			if err := r.Patch(ctx, t.obj, patch); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("releasing the sizer's fields on %s: %w", t.obj.GetName(), err)
			}
		}
	}
	base := wls.DeepCopy()
	controllerutil.RemoveFinalizer(wls, sizerv1alpha1.Finalizer)
	return r.Patch(ctx, wls, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// dropDerived removes the runtime variables the sizer derived on a workload it did not create, as the sizer goes:
// every other field it owns is handed over first, with its value, and an apply that holds nothing then removes what
// only the sizer still owns (derivedEnv says why they do not stay). It reports whether it wrote anything.
func (r *Reconciler) dropDerived(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target) (bool, error) {
	owner := workloadFieldOwner(wls)
	if derivedEnv(ownedFields(t.obj, owner)).empty() {
		return false, nil
	}
	if err := r.handOverFields(ctx, wls, owner, fieldSet{}, false); err != nil {
		return false, err
	}
	ref := wls.Target()
	var nothing runtime.ApplyConfiguration = appsv1ac.Deployment(ref.Name, wls.Namespace)
	if ref.Kind == "StatefulSet" {
		nothing = appsv1ac.StatefulSet(ref.Name, wls.Namespace)
	}
	if err := r.Apply(ctx, nothing, client.FieldOwner(owner)); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("removing the runtime variables the sizer derived on %s %s: %w", ref.Kind, ref.Name, err)
	}
	return true, nil
}

// finalize is what happens when a sizer is being deleted: the controller forgets it and releases what it held
// (release), then drops its finalizer.
func (r *Reconciler) finalize(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) (ctrl.Result, error) {
	r.forget(client.ObjectKeyFromObject(wls).String())
	return ctrl.Result{}, r.release(ctx, wls)
}

// addFinalizer holds the sizer with its finalizer, so that its deletion waits for release. A patch under the
// object's resourceVersion: the finalizer list is written whole, never over a newer one.
func (r *Reconciler) addFinalizer(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) error {
	base := wls.DeepCopy()
	if !controllerutil.AddFinalizer(wls, sizerv1alpha1.Finalizer) {
		return nil
	}
	return r.Patch(ctx, wls, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}
