package pipeline

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
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
// Failed, with the Ready condition's message), and each step that newly fails or is blocked, or newly serves under
// autoscalers that cancel each other out (Warning, with the step's reason and message), so `kubectl events` tells the story without a status diff. A step that stays in the
// same trouble makes no new event.
func transitions(old, cur inferencev1alpha1.PipelineStatus) []event {
	var out []event
	was := map[string]inferencev1alpha1.StepStatus{}
	for _, s := range old.Steps {
		was[s.Name] = s
	}
	for _, s := range cur.Steps {
		if !troubled(s.Phase) && s.Reason != inferencev1alpha1.ReasonAmbiguousAutoscalers {
			continue
		}
		if before, ok := was[s.Name]; ok && before.Reason == s.Reason && before.Phase == s.Phase {
			continue
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

// eventBudget bounds the event writes of one pass, all of them together: a pass records a handful of events at
// most, each worth a short wait, never a stuck reconcile.
const eventBudget = 5 * time.Second

// contextRecorder is a recorder whose writes a context bounds (EventWriter).
type contextRecorder interface {
	EventfContext(ctx context.Context, regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// recordTransitions records the events of a status change. The writes run in the pass, one after the other, under
// one budget taken from the pass's context: a stopping manager cancels them, and a slow apiserver costs the pass
// at most eventBudget in all. Writing them in the pass rather than from a queue keeps their order and needs no
// goroutine that outlives the pass; a write the budget cuts short is logged and dropped, as events are best effort.
// Extra events of the pass (an autoscaler's hand-back) come first.
func (r *Reconciler) recordTransitions(ctx context.Context, p *inferencev1alpha1.Pipeline, old, cur inferencev1alpha1.PipelineStatus, extra ...event) {
	measureSteps(p, old, cur, r.now()) // the written transitions are what the step metrics count, as the events do
	if r.Recorder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, eventBudget)
	defer cancel()
	for _, e := range append(extra, transitions(old, cur)...) {
		if ctx.Err() != nil {
			log.FromContext(ctx).Info("Event budget spent, dropping an event", "reason", e.reason)
			continue
		}
		var related runtime.Object
		if e.step != "" {
			// The step's Deployment as the related object: the recorder folds events of the same regarding, related,
			// type and reason into one series, so without it a second step's trouble would only count up the first's.
			related = &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: pipelinespec.StepObjectName(p, e.step), Namespace: p.Namespace}}
		}
		if cr, ok := r.Recorder.(contextRecorder); ok {
			cr.EventfContext(ctx, eventSubject(p), related, e.eventType, e.reason, e.action, "%s", truncate(e.note))
		} else {
			r.Recorder.Eventf(eventSubject(p), related, e.eventType, e.reason, e.action, "%s", truncate(e.note))
		}
	}
}

// eventSubject is the pipeline as its events refer to it: without the resourceVersion, which every status write
// changes, so repeated events fold into one series.
func eventSubject(p *inferencev1alpha1.Pipeline) *inferencev1alpha1.Pipeline {
	return &inferencev1alpha1.Pipeline{TypeMeta: metav1.TypeMeta{APIVersion: inferencev1alpha1.GroupVersion.String(), Kind: "Pipeline"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}}
}

// maxNote is the longest note an event may carry, in bytes (the apiserver refuses longer ones).
const maxNote = 1024

// truncate shortens a note to what an event may carry: at most maxNote bytes of valid UTF-8, cut between runes (a
// cut inside a rune would leave an invalid byte that JSON encoding turns into a three-byte replacement character,
// pushing the note over the limit). Invalid bytes already in the note count as the replacement they become.
func truncate(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if len(s) <= maxNote {
		return s
	}
	const ellipsis = "..."
	cut := maxNote - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
