package daemonset

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// writeStatus writes the whole status without a resourceVersion and remembers it (statuswrite.Written), so it cannot
// conflict with this controller's own last write, which the cache may not have seen yet. It reports a conflict
// (possible only if the apiserver runs out of its own retries) apart from errors, for a short requeue.
func (r *Reconciler) writeStatus(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, status daemonsetv1alpha1.DaemonSetStatus) (conflict bool, err error) {
	if err := r.written.Write(ctx, r.Client, ds, &status); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}
