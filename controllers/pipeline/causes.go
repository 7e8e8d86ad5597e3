package pipeline

import (
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// told is, by step, the scheduler's causes told in events since the step became Unschedulable. Unschedulable covers
// many causes, and the first one told is rarely the last: a pod is refused first for a claim not bound yet, then,
// once it is, for a taint it does not tolerate. Each cause is told once while the step stays Unschedulable: one that
// comes and goes with the rest of the cluster (a node joining, tainted not-ready until it is, which the scheduler
// tells in the same words as any other taint) is not told again each time it comes back. Other reasons name their
// cause (an image that cannot be pulled, a container that keeps exiting), and their messages change while the
// trouble stays (the kubelet alternates ErrImagePull and ImagePullBackOff, each with its own text): for them the
// reason is the cause, and an event is told once per reason.
type told map[string][]string

// enter records the causes of a step that became Unschedulable: the ones its event tells.
func (t told) enter(s inferencev1alpha1.StepStatus) {
	t[s.Name] = schedulingCauses(s.Message)
}

// news reports whether a step that was and is Unschedulable gives a cause not told yet, and records its causes as
// told. The step's previous status counts as told too (its event was told before this process remembers: another
// leader, a restart).
func (t told) news(before, now inferencev1alpha1.StepStatus) bool {
	known := union(t[now.Name], schedulingCauses(before.Message))
	causes := schedulingCauses(now.Message)
	t[now.Name] = union(known, causes)
	return newSchedulingCause(known, causes)
}

// keepOnly forgets the steps that are not Unschedulable now (or gone from the spec): if they become so again, their
// causes are told anew.
func (t told) keepOnly(steps []inferencev1alpha1.StepStatus) {
	unschedulable := map[string]bool{}
	for _, s := range steps {
		unschedulable[s.Name] = s.Reason == inferencev1alpha1.ReasonUnschedulable
	}
	for name := range t {
		if !unschedulable[name] {
			delete(t, name)
		}
	}
}

// union is the sorted causes of both lists.
func union(a, b []string) []string {
	all := slices.Concat(a, b)
	slices.Sort(all)
	return slices.Compact(all)
}

// newSchedulingCause reports whether the scheduler gives a cause that is not known. One that comes and goes with
// the rest of the cluster is not the step's: a cordoned node (a pinned step's own node cordoned is NodeCordoned, a
// reason of its own).
func newSchedulingCause(known, now []string) bool {
	for _, c := range now {
		if c != clauseCordoned && !slices.Contains(known, c) {
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

// toldOf is what this process told of a pipeline's unschedulable steps (told), kept until the pipeline is gone.
func (r *Reconciler) toldOf(p *inferencev1alpha1.Pipeline) told {
	r.toldMu.Lock()
	defer r.toldMu.Unlock()
	key := client.ObjectKeyFromObject(p).String()
	if r.told[key] == nil {
		if r.told == nil {
			r.told = map[string]told{}
		}
		r.told[key] = told{}
	}
	return r.told[key]
}
