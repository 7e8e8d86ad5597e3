// Package statuswrite writes the three kinds' statuses one way: the whole status as a merge patch without a
// resourceVersion, and, per object, the status this process last wrote, which a cache that has not seen that write
// yet must not undo.
//
// Each controller is its status's only writer. So the status it last wrote is the stored one, whatever its cache
// shows: a pass compares its new status with that (a status equal to it is not written again, however old the cached
// copy), and the write states every field (a field the cache shows equal to the new value may still differ in what is
// stored). No resourceVersion is sent, so the write cannot conflict with this controller's own last write.
package statuswrite

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch returns a JSON merge patch that sets an object's status to status (a struct, or a pointer to one), whatever
// the stored status is. Every field of the struct is in it, and so is every field of each struct it holds: a field
// that marshals away when zero (omitempty) is given as null, which removes it, and reads back as zero. A merge patch
// computed as the difference from a base would leave out what base and status share, and a base read from a lagging
// cache can differ from what is stored: the stored value would then survive. Lists (conditions, per-item detail) are
// replaced whole by a merge patch. A map's keys that status lacks would survive; no status holds a map.
func Patch(status any) ([]byte, error) {
	b, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	stateEveryField(reflect.TypeOf(status), fields)
	out, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	return out, nil
}

// stateEveryField sets to null each field of struct type t that fields (t marshalled) lacks, and does the same in each
// field that holds a struct.
func stateEveryField(t reflect.Type, fields map[string]any) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		v, ok := fields[name]
		if !ok {
			fields[name] = nil
			continue
		}
		if inner, isObject := v.(map[string]any); isObject {
			stateEveryField(f.Type, inner)
		}
	}
}

// Write writes status (a struct, or a pointer to one) to obj's status subresource with Patch's body, and reads the
// object as stored back into obj. It sends no resourceVersion, so it cannot conflict with this controller's own last
// write however far its cache lags. The apiserver's error comes back wrapped, so that a caller tells NotFound (the
// object is gone) and Conflict apart.
func Write(ctx context.Context, c client.Client, obj client.Object, status any) error {
	body, err := Patch(status)
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// Status is a kind's status type as a pointer, which deep-copies itself (what controller-gen generates).
type Status[P any] interface {
	DeepCopy() P
}

// Written remembers, per object (its namespace/name key and its UID: an object of the same name may replace it), the
// status this process last wrote to it. Its zero value is ready to use; it is safe for concurrent use.
type Written[P Status[P]] struct {
	mu   sync.Mutex
	last map[string]written[P]
}

type written[P any] struct {
	uid    types.UID
	status P
}

// Current is the object's stored status as far as this process knows: a copy of the one it last wrote, which the
// cache (cached) may not show yet; cached when this process has written none to this object. A new status starts from
// it, so that conditions keep their lastTransitionTime, and is compared with it.
func (w *Written[P]) Current(key string, uid types.UID, cached P) P {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, ok := w.last[key]; ok && last.uid == uid {
		return last.status.DeepCopy()
	}
	return cached
}

// Wrote records status as the one last written to the object.
func (w *Written[P]) Wrote(key string, uid types.UID, status P) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]written[P]{}
	}
	w.last[key] = written[P]{uid: uid, status: status.DeepCopy()}
}

// Forget drops what is remembered of the object: it is gone.
func (w *Written[P]) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// Len is how many objects' statuses are remembered.
func (w *Written[P]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.last)
}
