package sizer

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

// writeStatus writes the whole status without a resourceVersion (statuswrite.Write), so it cannot conflict with the
// sizer's own last write still missing from the cache, and remembers it as the one last written.
func (r *Reconciler) writeStatus(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, status sizerv1alpha1.WorkloadSizerStatus) error {
	if err := statuswrite.Write(ctx, r.Client, wls, &status); err != nil {
		return err
	}
	r.written.Wrote(client.ObjectKeyFromObject(wls).String(), wls.UID, &status)
	return nil
}
