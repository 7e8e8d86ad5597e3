package pipeline

import (
	"context"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// writeStatus writes the whole status without a resourceVersion and remembers it (statuswrite.Written), so it cannot
// conflict with the controller's own last write still missing from the cache.
func (r *Reconciler) writeStatus(ctx context.Context, p *inferencev1alpha1.Pipeline, status inferencev1alpha1.PipelineStatus) error {
	return r.written.Write(ctx, r.Client, p, &status)
}
