package pipeline

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// Event actions.
const (
	actionReconcile = "Reconcile"
	actionRun       = "Run"
)

// event is one event to record on a pipeline; step names the step it is about ("" for the pipeline).
type event struct {
	eventType, reason, action, note, step string
}

// transitions are the events a status change makes: the pipeline's phase when it changes (Warning for Degraded and
// Failed, with the Ready condition's message), and each step that newly fails or is blocked, or whose pod the
// scheduler refuses for a cause not told yet (told), or that newly serves under autoscalers that cancel each other
// out (Warning, with the step's reason and message), so `kubectl events` tells the story without a status diff. A
// step that stays in the same trouble makes no new event. It records in t the causes it tells, at now.
func transitions(old, cur inferencev1alpha1.PipelineStatus, t told, now time.Time) []event {
	var out []event
	was := map[string]inferencev1alpha1.StepStatus{}
	for _, s := range old.Steps {
		was[s.Name] = s
	}
	t.keepOnly(cur.Steps)
	for _, s := range cur.Steps {
		if !troubled(s.Phase) && s.Reason != inferencev1alpha1.ReasonAmbiguousAutoscalers {
			continue
		}
		if before, ok := was[s.Name]; ok && before.Phase == s.Phase && before.Reason == s.Reason {
			if s.Reason != inferencev1alpha1.ReasonUnschedulable || !t.news(before, s, now) {
				continue
			}
		} else if s.Reason == inferencev1alpha1.ReasonUnschedulable {
			t.enter(s, now)
		}
		out = append(out, event{corev1.EventTypeWarning, s.Reason, actionRun, "Step " + s.Name + ": " + s.Message, s.Name})
	}
	if cur.Phase != old.Phase && cur.Phase != "" {
		t := corev1.EventTypeNormal
		if troubled(cur.Phase) {
			t = corev1.EventTypeWarning
		}
		note := "Pipeline is " + string(cur.Phase)
		if c := meta.FindStatusCondition(cur.Conditions, inferencev1alpha1.ConditionReady); c != nil && c.Message != "" {
			note = c.Message
		}
		out = append(out, event{t, "Pipeline" + string(cur.Phase), actionReconcile, note, ""})
	}
	return out
}

// troubled reports whether a phase needs someone's attention.
func troubled(p inferencev1alpha1.Phase) bool {
	return p == inferencev1alpha1.PhaseDegraded || p == inferencev1alpha1.PhaseFailed
}

// recordTransitions records the events of a status change, after any extra events of the pass (an autoscaler's
// hand-back), in the pass (recorder.Record).
func (r *Reconciler) recordTransitions(ctx context.Context, p *inferencev1alpha1.Pipeline, old, cur inferencev1alpha1.PipelineStatus, extra ...event) {
	now := r.now()
	measureSteps(p, old, cur, now) // the written transitions are what the step metrics count, as the events do
	var evs []recorder.Event
	for _, e := range append(extra, transitions(old, cur, r.toldOf(p), now)...) {
		var related runtime.Object
		if e.step != "" {
			// The step's Deployment as the related object: events of one step stay apart from another's.
			related = &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: pipelinespec.StepObjectName(p, e.step), Namespace: p.Namespace}}
		}
		evs = append(evs, recorder.Event{Type: e.eventType, Reason: e.reason, Action: e.action, Note: e.note, Related: related})
	}
	recorder.Record(ctx, r.Recorder, recorder.Subject(p), evs...)
}

// toldOf is what this process told of a pipeline's unschedulable steps (told), kept until the pipeline is gone; a
// pipeline of the same name with another UID starts anew.
func (r *Reconciler) toldOf(p *inferencev1alpha1.Pipeline) told {
	r.toldMu.Lock()
	defer r.toldMu.Unlock()
	key := client.ObjectKeyFromObject(p).String()
	if e := r.told[key]; e != nil && e.uid == p.UID {
		return e.steps
	}
	if r.told == nil {
		r.told = map[string]*pipelineTold{}
	}
	e := &pipelineTold{uid: p.UID, steps: told{}}
	r.told[key] = e
	return e.steps
}
