package sizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// walk descends a FieldsV1 trie along path and returns the map found there (nil when absent).
func walk(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

// keyName reads the name out of a list-map key `k:{"name":"x"}`.
func keyName(key string) (string, bool) {
	raw, ok := strings.CutPrefix(key, "k:")
	if !ok {
		return "", false
	}
	var k struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(raw), &k); err != nil || k.Name == "" {
		return "", false
	}
	return k.Name, true
}

// conflictMessage turns a server-side apply conflict into one sentence naming each field and its manager, or ""
// when err is not an apply conflict.
func conflictMessage(err error) string {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !asAPIStatus(err, &status) || status.Status().Details == nil {
		return ""
	}
	var parts []string
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		// The message reads: conflict with "manager" using apps/v1
		manager := c.Message
		if _, rest, ok := strings.Cut(c.Message, `"`); ok {
			manager, _, _ = strings.Cut(rest, `"`)
		}
		parts = append(parts, fmt.Sprintf("%s is owned by %q", c.Field, manager))
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func asAPIStatus(err error, out *apierrors.APIStatus) bool {
	return errors.As(err, out)
}

// withoutEntriesOf returns obj's managedFields minus the entries of the given managers, and whether there was one
// to drop.
func withoutEntriesOf(obj metav1.Object, managers ...string) ([]metav1.ManagedFieldsEntry, bool) {
	var out []metav1.ManagedFieldsEntry
	found := false
	for _, e := range obj.GetManagedFields() {
		if slices.Contains(managers, e.Manager) {
			found = true
			continue
		}
		out = append(out, e)
	}
	return out, found
}

// lastApplied returns the fields of the sizer's last apply in this process.
func (r *Reconciler) lastApplied(key string) fieldSet {
	f, _ := r.appliedRecord(key)
	return f
}

// appliedRecord returns the fields of the sizer's last apply in this process, and whether there was one.
func (r *Reconciler) appliedRecord(key string) (fieldSet, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.applied[key]
	return f, ok
}

// rememberApplied records the fields of the sizer's last apply.
func (r *Reconciler) rememberApplied(key string, fields fieldSet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = map[string]fieldSet{}
	}
	r.applied[key] = fields
}
