package sizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
