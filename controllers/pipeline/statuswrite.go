package pipeline

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/statuswrite"
)

// writeStatus writes the whole status without a resourceVersion (statuswrite.Write), so it cannot conflict with the
// controller's own last write still missing from the cache, and remembers it as the one last written.
func (r *Reconciler) writeStatus(ctx context.Context, p *inferencev1alpha1.Pipeline, status inferencev1alpha1.PipelineStatus) error {
	if err := statuswrite.Write(ctx, r.Client, p, &status); err != nil {
		return err
	}
	r.written.Wrote(client.ObjectKeyFromObject(p).String(), p.UID, &status)
	return nil
}
