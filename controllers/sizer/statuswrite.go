package sizer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// writeStatus writes the status as a merge patch against the sizer as read: it carries only what changed and no
// resourceVersion, so it never conflicts with the sizer's own last write still missing from the cache.
func (r *Reconciler) writeStatus(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, status sizerv1alpha1.WorkloadSizerStatus) error {
	base := wls.DeepCopy()
	wls.Status = status
	if err := r.Status().Patch(ctx, wls, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// writtenStatus is a status this process wrote, and the sizer (by UID: one of the same name may replace it) it
// was written to.
type writtenStatus struct {
	uid    types.UID
	status sizerv1alpha1.WorkloadSizerStatus
}

// lastStatus returns the status this process last wrote for the sizer.
func (r *Reconciler) lastStatus(key string, uid types.UID) (sizerv1alpha1.WorkloadSizerStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.statuses[key]
	if !ok || w.uid != uid {
		return sizerv1alpha1.WorkloadSizerStatus{}, false
	}
	return *w.status.DeepCopy(), true
}

// rememberStatus records the status written for a sizer.
func (r *Reconciler) rememberStatus(key string, uid types.UID, st sizerv1alpha1.WorkloadSizerStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses == nil {
		r.statuses = map[string]writtenStatus{}
	}
	r.statuses[key] = writtenStatus{uid: uid, status: *st.DeepCopy()}
}
