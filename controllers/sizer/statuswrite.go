package sizer

import (
	"context"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// writeStatus writes the whole status without a resourceVersion and remembers it (statuswrite.Written), so it cannot
// conflict with the sizer's own last write still missing from the cache.
func (r *Reconciler) writeStatus(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, status sizerv1alpha1.WorkloadSizerStatus) error {
	return r.written.Write(ctx, r.Client, wls, &status)
}
