package sizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/conditions"
)

// conflict is one thing the sizer left alone instead of writing, and why.
type conflict struct {
	reason, message string
}

// setCondition sets one condition, observed at the sizer's current generation.
func setCondition(st *sizerv1alpha1.WorkloadSizerStatus, generation int64, t string, ok bool, reason, message string) {
	conditions.Set(&st.Conditions, metav1.Condition{Type: t, Status: conditions.Status(ok), Reason: reason, Message: message,
		ObservedGeneration: generation})
}

// setConflict sums the pass's conflicts up in the Conflict condition: its reason is the first conflict's (they are
// sorted, so the reason is stable), its message lists them all.
func setConflict(st *sizerv1alpha1.WorkloadSizerStatus, generation int64, conflicts []conflict) {
	if len(conflicts) == 0 {
		setCondition(st, generation, sizerv1alpha1.ConditionConflict, false, sizerv1alpha1.ReasonNoConflict, "the sizer owns every field and object it writes")
		return
	}
	sort.Slice(conflicts, func(i, j int) bool {
		return conflicts[i].reason+conflicts[i].message < conflicts[j].reason+conflicts[j].message
	})
	msgs := make([]string, 0, len(conflicts))
	for _, c := range conflicts {
		msgs = append(msgs, c.message)
	}
	setCondition(st, generation, sizerv1alpha1.ConditionConflict, true, conflicts[0].reason, strings.Join(msgs, "; "))
}

// rolloutProblem is the workload's own report that it cannot reach its size, or nil.
type rolloutProblem struct {
	reason, message string
}

// setReady sums the conditions up: Ready is True when the target exists, is sized, nothing is in conflict, the
// workload reports no failure to create or roll out its pods, and enough replicas are ready: spec.size of them, or,
// with spec.size unset, the workload's own replicas (workloadReplicas, nil when it was not read). A not-Ready
// sizer's reason names the first thing that is wrong, so `kubectl get wls` shows it.
func setReady(st *sizerv1alpha1.WorkloadSizerStatus, wls *sizerv1alpha1.WorkloadSizer, problem *rolloutProblem, workloadReplicas *int32) {
	g := wls.Generation
	if c := meta.FindStatusCondition(st.Conditions, sizerv1alpha1.ConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
		setCondition(st, g, sizerv1alpha1.ConditionReady, false, c.Reason, c.Message)
		return
	}
	for _, t := range []string{sizerv1alpha1.ConditionTargetFound, sizerv1alpha1.ConditionSized} {
		if c := meta.FindStatusCondition(st.Conditions, t); c == nil || c.Status != metav1.ConditionTrue {
			reason, msg := sizerv1alpha1.ReasonNotReady, t+" is not True"
			if c != nil {
				reason, msg = c.Reason, c.Message
			}
			setCondition(st, g, sizerv1alpha1.ConditionReady, false, reason, msg)
			return
		}
	}
	if problem != nil {
		setCondition(st, g, sizerv1alpha1.ConditionReady, false, problem.reason, problem.message)
		return
	}
	want, of := wls.Spec.Size, ""
	if want == nil {
		want, of = workloadReplicas, " (the workload's replicas: spec.size is unset)"
	}
	if want != nil && st.ReadyReplicas < *want {
		setCondition(st, g, sizerv1alpha1.ConditionReady, false, sizerv1alpha1.ReasonNotReady, fmt.Sprintf("%d of %d replicas ready%s",
			st.ReadyReplicas, *want, of))
		return
	}
	setCondition(st, g, sizerv1alpha1.ConditionReady, true, sizerv1alpha1.ReasonReady, fmt.Sprintf("%d replicas ready", st.ReadyReplicas))
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
