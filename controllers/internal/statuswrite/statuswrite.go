// Package statuswrite writes the three kinds' statuses one way: the whole status as a merge patch without a
// resourceVersion, remembered per object until the cache shows it, so that a cache that has not seen the write yet
// does not undo it.
//
// Each controller is its status's only writer. So the status it last wrote is the stored one until its cache shows
// that write (or a later one): a pass starts from that status and compares its new status with it (a status equal to
// it is not written again, however old the cached copy), and the write states every field (a field the cache shows
// equal to the new value may still differ in what is stored). No resourceVersion is sent, so the write cannot
// conflict with this controller's own last write.
package statuswrite

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch returns a JSON merge patch that sets an object's status to status (a struct, or a pointer to one), whatever
// the stored status is. Every field of the struct is in it, and so is every field of each struct it holds: a field
// that marshals away when zero (omitempty) is given as null, which removes it, and reads back as zero. A merge patch
// computed as the difference from a base would leave out what base and status share, and a base read from a lagging
// cache can differ from what is stored: the stored value would then survive. Lists (conditions, per-item detail) are
// replaced whole by a merge patch. A map's keys that status lacks would survive; no status holds a map (a test walks
// the three kinds' status types for what Patch cannot state).
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
		name := jsonName(f)
		if name == "" {
			continue
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

// jsonName is the name a field marshals under, or "" for one that does not marshal as a field of its own.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case !f.IsExported() || f.Anonymous || name == "-":
		return ""
	case name == "":
		return f.Name
	}
	return name
}

// Status is a kind's status type as a pointer, which deep-copies itself (what controller-gen generates).
type Status[P any] interface {
	DeepCopy() P
}

// Written writes statuses and remembers, per object (its namespace/name key and its UID: an object of the same name
// may replace it), the status this process last wrote to it and the resourceVersion that write made. Its zero value
// is ready to use; it is safe for concurrent use.
type Written[P Status[P]] struct {
	mu   sync.Mutex
	last map[string]written[P]
}

type written[P any] struct {
	uid             types.UID
	resourceVersion string
	status          P
}

// Current is obj's stored status as far as this process knows: a copy of the one it last wrote, while obj (read
// from the cache, its status cached) does not show that write yet; cached when obj shows it or a later write (the
// cache has caught up: what another writer did since is seen too), or when this process has written none to obj.
// A new status starts from it, so that conditions keep their lastTransitionTime, and is compared with it.
func (w *Written[P]) Current(obj client.Object, cached P) P {
	key := client.ObjectKeyFromObject(obj).String()
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[key]
	switch {
	case !ok || last.uid != obj.GetUID():
		return cached
	case notOlder(obj.GetResourceVersion(), last.resourceVersion):
		delete(w.last, key)
		return cached
	}
	return last.status.DeepCopy()
}

// notOlder says whether resourceVersion a is the same as b or a later one. The apiserver's resourceVersions are
// etcd's revisions, which only grow; one that is not a number is compared for equality only (a later one then reads
// as older, and the status written is kept until the next write).
func notOlder(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// Write writes status to obj's status subresource with Patch's body and no resourceVersion, so it cannot conflict
// with this controller's own last write however far its cache lags, and remembers it. obj is not changed: the object
// the apiserver sends back is read into a copy (read into obj, it would land on the slices and pointers that a
// status computed from obj's still shares). A failed write leaves what is remembered as it was: that status was
// stored at its resourceVersion, and if the failed write landed after all, the cache shows a later one and Current
// trusts the cache then. A write refused because the object is gone forgets it. The apiserver's error comes back
// wrapped, so that a caller tells NotFound (the object is gone) and Conflict apart.
func (w *Written[P]) Write(ctx context.Context, c client.Client, obj client.Object, status P) error {
	key := client.ObjectKeyFromObject(obj).String()
	body, err := Patch(status)
	if err != nil {
		return err
	}
	stored, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("writing status: %T does not copy to an object", obj)
	}
	if err := c.Status().Patch(ctx, stored, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsNotFound(err) {
			w.Forget(key)
		}
		return fmt.Errorf("writing status: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]written[P]{}
	}
	w.last[key] = written[P]{uid: obj.GetUID(), resourceVersion: stored.GetResourceVersion(), status: status.DeepCopy()}
	return nil
}

// Forget drops what is remembered of the object with the given namespace/name key: it is gone.
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
