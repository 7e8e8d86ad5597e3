package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// statusConflictRequeue is how soon a pass whose write met a conflict (a status write, an adoption) looks again: a
// conflict is normal, not an error to back off from.
const statusConflictRequeue = time.Second

// statusPatch is a JSON merge patch that sets the DaemonSet's status to st, whatever the stored status is. Every
// field of the status is in it: a field that marshals away when zero (numberAvailable 0, no collisionCount) is
// given as null, which removes it, and reads back as zero. A merge patch computed as the difference from a base
// would leave out what base and st share, and a base read from a lagging cache can differ from what is stored (the
// controller's own last write): the stored value would then survive. Lists (the conditions) are replaced whole.
func statusPatch(st daemonsetv1alpha1.DaemonSetStatus) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	fields := map[string]any{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	t := reflect.TypeOf(st)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if _, ok := fields[name]; !ok && name != "" && name != "-" {
			fields[name] = nil
		}
	}
	out, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	return out, nil
}

// writtenStatuses remembers the status this process last wrote per DaemonSet (by key, with its UID), so that a
// pass reading from a cache that has not seen that write yet does not write the same status again.
type writtenStatuses struct {
	mu   sync.Mutex
	last map[string]writtenStatus
}

type writtenStatus struct {
	uid    types.UID
	status daemonsetv1alpha1.DaemonSetStatus
}

func newWrittenStatuses() *writtenStatuses { return &writtenStatuses{last: map[string]writtenStatus{}} }

func (w *writtenStatuses) wrote(key string, uid types.UID, st daemonsetv1alpha1.DaemonSetStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last[key] = writtenStatus{uid: uid, status: *st.DeepCopy()}
}

// current is the DaemonSet's stored status as far as this process knows: the one it last wrote, which the cache
// (passed as cached) may not show yet; the cached one when this process has not written any. This controller is
// the status's only writer. A new status starts from it, so that conditions keep their lastTransitionTime.
func (w *writtenStatuses) current(key string, uid types.UID, cached daemonsetv1alpha1.DaemonSetStatus) daemonsetv1alpha1.DaemonSetStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, ok := w.last[key]; ok && last.uid == uid {
		return *last.status.DeepCopy()
	}
	return cached
}

func (w *writtenStatuses) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// writeStatus writes status to the status subresource with a merge patch that states the whole status (see
// statusPatch) and carries no resourceVersion: it cannot conflict with this controller's own last write, which the
// cache may not have seen yet. It reports a conflict (possible only if the apiserver runs out of its own retries)
// apart from errors, for a short requeue.
func (r *Reconciler) writeStatus(ctx context.Context, ds *daemonsetv1alpha1.DaemonSet, status daemonsetv1alpha1.DaemonSetStatus) (conflict bool, err error) {
	body, err := statusPatch(status)
	if err != nil {
		return false, err
	}
	if err := r.Status().Patch(ctx, ds, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, fmt.Errorf("writing status: %w", err)
	}
	return false, nil
}
