package daemonset

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// finalize is what happens when a DaemonSet is being deleted: the garbage collector removes the pods and revisions
// it owns, or, for an orphan delete, takes its owner reference off them, so the controller forgets it and only
// takes its own reference off the revisions an earlier version wrote, which would refuse the collector's patch
// (orphanOldRevisions). No finalizer waits for it.
func (r *Reconciler) finalize(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet) (ctrl.Result, error) {
	r.forget(client.ObjectKeyFromObject(ds).String())
	return ctrl.Result{}, r.orphanOldRevisions(ctx, ds)
}
