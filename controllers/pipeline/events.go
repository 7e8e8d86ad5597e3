package pipeline

import (
	"context"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
// Failed, with the Ready condition's message), and each step that newly fails or is blocked, or whose trouble has a
// new cause (sameTrouble), or that newly serves under autoscalers that cancel each other out (Warning, with the
// step's reason and message), so `kubectl events` tells the story without a status diff. A step that stays in the
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
		if before, ok := was[s.Name]; ok && sameTrouble(before, s) {
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

// sameTrouble reports whether a step's status tells the same trouble as before: the same phase and reason, and a
// message of the same cause. A reason covers many causes (Unschedulable: a claim not bound yet, then, once it is, a
// taint the pod does not tolerate), and the first one told is rarely the last.
func sameTrouble(before, now inferencev1alpha1.StepStatus) bool {
	return before.Phase == now.Phase && before.Reason == now.Reason && cause(before.Message) == cause(now.Message)
}

var (
	// podName is a pod a step's message names ("pod <name>", as podProblem and volumeProblem write it).
	podName = regexp.MustCompile(`\bpod [a-z0-9][-a-z0-9.]*`)
	// number is a count in a step's message: ready replicas, the scheduler's nodes, an exit code.
	number = regexp.MustCompile(`[0-9]+`)
)

// cause is what a step's message says is wrong, without what changes while the trouble stays: the pod it names (a
// rollout's new pod meets the same trouble) and the numbers (the replicas ready, the nodes the scheduler looked
// at, which grow with the cluster).
func cause(message string) string {
	return number.ReplaceAllString(podName.ReplaceAllString(message, "pod"), "#")
}

// troubled reports whether a phase needs someone's attention.
func troubled(p inferencev1alpha1.Phase) bool {
	return p == inferencev1alpha1.PhaseDegraded || p == inferencev1alpha1.PhaseFailed
}

// recordTransitions records the events of a status change, after any extra events of the pass (an autoscaler's
// hand-back), in the pass (recorder.Record).
func (r *Reconciler) recordTransitions(ctx context.Context, p *inferencev1alpha1.Pipeline, old, cur inferencev1alpha1.PipelineStatus, extra ...event) {
	measureSteps(p, old, cur, r.now()) // the written transitions are what the step metrics count, as the events do
	var evs []recorder.Event
	for _, e := range append(extra, transitions(old, cur)...) {
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
