package sizer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// orphanOf reports whether obj is an object this sizer made that lost its owner: no controller, and the labels the
// sizer puts on what it creates, with its name (a sizer deleted with --cascade=orphan leaves its workload, budget,
// Service and Ingress so). apps/v1's controllers adopt their orphans the same way, by what marks them as theirs; a
// user's object does not carry these labels, so the sizer never takes one.
func orphanOf(obj client.Object, wls *sizerv1alpha1.WorkloadSizer) bool {
	if len(obj.GetOwnerReferences()) > 0 || obj.GetDeletionTimestamp() != nil {
		return false // an object with any owner is someone's
	}
	l := obj.GetLabels()
	return l[sizerv1alpha1.NameLabel] == wls.Name && l[commonlabels.ManagedBy] == commonlabels.Keelson
}

// adopt makes wls the controller of obj, one of its orphans, under the resourceVersion read: an object changed since
// (given another owner, say) is not adopted, and the next pass looks again. A workload is patched, a budget, Service
// or Ingress updated (the verbs the sizer's role grants on each).
func (r *Reconciler) adopt(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, obj client.Object) error {
	// The sizer as the apiserver has it now: one being deleted (with --cascade=orphan, say) adopts nothing, or the
	// garbage collector would delete what the user asked to keep once the sizer is gone.
	var live sizerv1alpha1.WorkloadSizer
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(wls), &live); err != nil {
		return fmt.Errorf("reading the sizer before adopting %s: %w", obj.GetName(), err)
	}
	if live.UID != wls.UID || live.DeletionTimestamp != nil {
		return fmt.Errorf("not adopting %s: the sizer is being deleted", obj.GetName())
	}
	base := obj.DeepCopyObject().(client.Object)
	ref := metav1.NewControllerRef(wls, sizerv1alpha1.GroupVersion.WithKind("WorkloadSizer"))
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), *ref))
	var err error
	switch obj.(type) {
	case *appsv1.Deployment, *appsv1.StatefulSet:
		err = r.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	default:
		err = r.Update(ctx, obj, client.FieldOwner(FieldOwner))
	}
	if err != nil {
		return fmt.Errorf("adopting %s: %w", obj.GetName(), err)
	}
	return nil
}
