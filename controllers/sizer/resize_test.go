package sizer

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResizeVerdict(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Conditions: conds}}
	}
	cond := func(t corev1.PodConditionType, reason string, age time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-age))}
	}
	for name, tc := range map[string]struct {
		pod          *corev1.Pod
		pending      bool
		fallback     string
		infeasible   string
		recheckAtMax time.Duration
	}{
		"nothing under way":          {pod: pod(cond(corev1.PodReady, "", time.Hour))},
		"infeasible at once":         {pod: pod(cond(corev1.PodResizePending, corev1.PodReasonInfeasible, 0)), infeasible: "cannot be resized in place"},
		"failed at once":             {pod: pod(cond(corev1.PodResizeInProgress, corev1.PodReasonError, 0)), fallback: "failed"},
		"deferred, within deadline":  {pod: pod(cond(corev1.PodResizePending, corev1.PodReasonDeferred, time.Minute)), pending: true, recheckAtMax: resizePollInterval},
		"deferred past five minutes": {pod: pod(cond(corev1.PodResizePending, corev1.PodReasonDeferred, 6*time.Minute)), fallback: "Deferred for 6m0s, past its 5m0s deadline"},
		"in progress, within an hour": {pod: pod(cond(corev1.PodResizeInProgress, "", 59*time.Minute+58*time.Second)), pending: true,
			recheckAtMax: 2 * time.Second},
		"in progress past an hour": {pod: pod(cond(corev1.PodResizeInProgress, "", 61*time.Minute)), fallback: "in progress for 1h1m0s"},
	} {
		t.Run(name, func(t *testing.T) {
			got := resizeVerdict(tc.pod, now, DefaultResizeDeferredTimeout, DefaultResizeInProgressTimeout)
			if got.pending != tc.pending || (tc.fallback == "") != (got.fallback == "") || !strings.Contains(got.fallback, tc.fallback) ||
				(tc.infeasible == "") != (got.infeasible == "") || !strings.Contains(got.infeasible, tc.infeasible) {
				t.Errorf("got %+v", got)
			}
			if tc.pending && (got.recheck <= 0 || got.recheck > tc.recheckAtMax) {
				t.Errorf("recheck %s, want in (0, %s]", got.recheck, tc.recheckAtMax)
			}
		})
	}
}
