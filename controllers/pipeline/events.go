package pipeline

import (
	"context"
	"regexp"
	"slices"
	"strings"

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
// Failed, with the Ready condition's message), and each step that newly fails or is blocked, or whose pod the
// scheduler refuses for a new cause (sameTrouble), or that newly serves under autoscalers that cancel each other out (Warning, with the
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

// sameTrouble reports whether a step's status tells the same trouble as before: the same phase and reason and, for a
// pod the scheduler cannot place, no new cause (newSchedulingCause). Unschedulable covers many causes, and the first
// one told is rarely the last: a pod is refused first for a claim not bound yet, then, once it is, for a taint it
// does not tolerate. Other reasons name their cause (an image that cannot be pulled, a container that keeps
// exiting), and their messages change while the trouble stays (the kubelet alternates ErrImagePull and
// ImagePullBackOff, each with its own text): for them the reason is the cause.
func sameTrouble(before, now inferencev1alpha1.StepStatus) bool {
	if before.Phase != now.Phase || before.Reason != now.Reason {
		return false
	}
	if now.Reason == inferencev1alpha1.ReasonUnschedulable {
		return !newSchedulingCause(schedulingCauses(before.Message), schedulingCauses(now.Message))
	}
	return true
}

// newSchedulingCause reports whether the scheduler gives a cause it did not give before. A cause that goes is no
// news (the step's status says what is left), and one that comes and goes with the rest of the cluster is not the
// step's: a cordoned node (the step's own pinned node cordoned is NodeCordoned, a reason of its own).
func newSchedulingCause(before, now []string) bool {
	for _, c := range now {
		if c != clauseCordoned && !slices.Contains(before, c) {
			return true
		}
	}
	return false
}

// clauseCordoned is the scheduler's clause for nodes that are cordoned, without its count.
const clauseCordoned = "node(s) were unschedulable"

var (
	// nodesAvailable is how the scheduler's message starts: how many nodes of how many fit.
	nodesAvailable = regexp.MustCompile(`^[0-9]+/[0-9]+ nodes are available:\s*`)
	// clauseCount is how many nodes a clause of the scheduler's message is about.
	clauseCount = regexp.MustCompile(`^[0-9]+ `)
)

// schedulingCauses are the causes in the scheduler's message of an unschedulable step (podProblem's "cannot be
// scheduled: ..."), sorted. The scheduler writes "0/N nodes are available: " and then either one sentence (a
// PreFilter's: "pod has unbound immediate PersistentVolumeClaims.") or its clauses, "<count> <cause>" joined by ", "
// and sorted as text (counts first, so their order changes with the counts), then a ". " and what its PostFilter
// plugins say (a preemption verdict, a claim deallocation): kept are the causes, without their counts; dropped
// is the PostFilter's part, and anything the step's message adds after a "; ". Nil when the message has none.
func schedulingCauses(message string) []string {
	_, msg, ok := strings.Cut(message, "cannot be scheduled: ")
	if !ok {
		return nil
	}
	msg, _, _ = strings.Cut(msg, "; ")
	msg = nodesAvailable.ReplaceAllString(strings.TrimSpace(msg), "")
	msg, _, _ = strings.Cut(msg, ". ")
	var causes []string
	for _, clause := range strings.Split(strings.TrimSuffix(msg, "."), ", ") {
		if clause = clauseCount.ReplaceAllString(strings.TrimSpace(clause), ""); clause != "" {
			causes = append(causes, clause)
		}
	}
	slices.Sort(causes)
	return slices.Compact(causes)
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
