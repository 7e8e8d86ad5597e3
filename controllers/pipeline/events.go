package pipeline

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
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
// Failed, with the Ready condition's message), and each step that newly fails or is blocked (Warning, with the
// step's reason and message), so `kubectl events` tells the story without a status diff. A step that stays in the
// same trouble makes no new event.
func transitions(old, cur inferencev1alpha1.PipelineStatus) []event {
	var out []event
	was := map[string]inferencev1alpha1.StepStatus{}
	for _, s := range old.Steps {
		was[s.Name] = s
	}
	for _, s := range cur.Steps {
		if !troubled(s.Phase) {
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
		if c := meta.FindStatusCondition(cur.Conditions, ConditionReady); c != nil && c.Message != "" {
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

// recordTransitions records the events of a status change.
func (r *Reconciler) recordTransitions(p *inferencev1alpha1.Pipeline, old, cur inferencev1alpha1.PipelineStatus) {
	if r.Recorder == nil {
		return
	}
	for _, e := range transitions(old, cur) {
		var related runtime.Object
		if e.step != "" {
			// The step's Deployment as the related object: the recorder folds events of the same regarding, related,
			// type and reason into one series, so without it a second step's trouble would only count up the first's.
			related = &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: StepObjectName(p, e.step), Namespace: p.Namespace}}
		}
		r.Recorder.Eventf(eventSubject(p), related, e.eventType, e.reason, e.action, "%s", truncate(e.note))
	}
}

// eventSubject is the pipeline as its events refer to it: without the resourceVersion, which every status write
// changes, so repeated events fold into one series.
func eventSubject(p *inferencev1alpha1.Pipeline) *inferencev1alpha1.Pipeline {
	return &inferencev1alpha1.Pipeline{TypeMeta: metav1.TypeMeta{APIVersion: inferencev1alpha1.GroupVersion.String(), Kind: "Pipeline"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}}
}

// maxNote is the longest note an event may carry (the apiserver refuses longer ones).
const maxNote = 1024

// truncate shortens a note to what an event may carry.
func truncate(s string) string {
	if len(s) <= maxNote {
		return s
	}
	return s[:maxNote-3] + "..."
}
