package pipeline

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// told is, by step, when each of the scheduler's causes was told in an event since the step became Unschedulable.
// Unschedulable covers many causes, and the first one told is rarely the last: a pod is refused first for a claim
// not bound yet, then, once it is, for a taint it does not tolerate. Each cause is told once while the step stays
// Unschedulable, and again only once its event is gone (toldFor): one that comes and goes with the rest of the
// cluster (a node joining, tainted not-ready until it is, which the scheduler tells in the same words as any other
// taint) is not told each time it comes back. Other reasons name their cause (an image that cannot be pulled, a
// container that keeps exiting), and their messages change while the trouble stays (the kubelet alternates
// ErrImagePull and ImagePullBackOff, each with its own text): for them the reason is the cause, and an event is told
// once per reason.
type told map[string]map[string]time.Time

// toldFor is how long a cause counts as told: the life of its event (kube-apiserver's --event-ttl default). One
// that comes back later is told again, as `kubectl events` no longer shows it.
const toldFor = time.Hour

// enter records the causes of a step that became Unschedulable, which its event tells, as told at now.
func (t told) enter(s inferencev1alpha1.StepStatus, now time.Time) {
	t[s.Name] = map[string]time.Time{}
	for _, c := range schedulingCauses(s.Message) {
		t[s.Name][c] = now
	}
}

// news reports whether a step that was and is Unschedulable gives a cause not told yet (nor within toldFor), and
// records what is told: when it is news, the event tells every cause of the message. A cause of the step's previous
// status is not news: it was told, maybe before this process remembers (another leader, a restart), and stays.
func (t told) news(before, s inferencev1alpha1.StepStatus, now time.Time) bool {
	known := t[s.Name]
	if known == nil {
		known = map[string]time.Time{}
		t[s.Name] = known
	}
	prev, causes := schedulingCauses(before.Message), schedulingCauses(s.Message)
	for _, c := range prev {
		if _, ok := known[c]; !ok {
			known[c] = now // told before this process remembers
		}
	}
	news := false
	for _, c := range causes {
		if at, ok := known[c]; c != clauseCordoned && !slices.Contains(prev, c) && (!ok || now.Sub(at) >= toldFor) {
			news = true
		}
	}
	for c, at := range known {
		if now.Sub(at) >= toldFor && !slices.Contains(causes, c) {
			delete(known, c) // its event is gone
		}
	}
	if news {
		for _, c := range causes {
			known[c] = now
		}
	}
	return news
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

// clauseCordoned is the scheduler's clause for nodes that are cordoned, without its count: never a new cause of
// its own, as it comes and goes with the rest of the cluster (a pinned step's own node cordoned is NodeCordoned, a
// reason of its own).
const clauseCordoned = "node(s) were unschedulable"

var (
	// nodesAvailable is how the scheduler's message starts: how many nodes of how many fit.
	nodesAvailable = regexp.MustCompile(`^[0-9]+/[0-9]+ nodes are available:\s*`)
	// clauseCount is how many nodes a clause of the scheduler's message is about.
	clauseCount = regexp.MustCompile(`^[0-9]+ `)
	// taintValue is a taint's value in a clause of a scheduler before 1.34 ("untolerated taint {key: value}"):
	// some change while the taint stays (the cluster autoscaler's deletion taint carries a time).
	taintValue = regexp.MustCompile(`(taint \{[^:}]*):[^}]*\}`)
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
		clause = taintValue.ReplaceAllString(clauseCount.ReplaceAllString(strings.TrimSpace(clause), ""), "$1}")
		if clause != "" {
			causes = append(causes, clause)
		}
	}
	slices.Sort(causes)
	return slices.Compact(causes)
}

// pipelineTold is what a pipeline's events told (told), and the UID of the pipeline they were about.
type pipelineTold struct {
	uid   types.UID
	steps told
}
