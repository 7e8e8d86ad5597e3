// Package recorder is how the three controllers record events (events.k8s.io/v1): each derives a pass's events as
// a list of Event values (a pure function of the status before and after, or of what the pass did), and Record
// writes them in the pass, one after the other, under one time budget, through a Writer that folds events by what
// they say, so that a new cause under the same reason is a new event rather than a count-up of the old one.
package recorder

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Event is one event to record about an object.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason says why, in one CamelCase word.
	Reason string
	// Action is what the controller did, or failed to do.
	Action string
	// Note says it for a person; Record cuts it to what an event may carry.
	Note string
	// Related is a second object the event is about (a pod, a step's Deployment), or nil.
	Related runtime.Object
}

// Budget bounds the event writes of one Record call, all of them together: a pass records a handful of events at
// most, each worth a short wait, never a stuck reconcile.
const Budget = 5 * time.Second

// contextRecorder is a recorder whose writes a context bounds (Writer).
type contextRecorder interface {
	EventfContext(ctx context.Context, regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Record writes events about regarding through rec (nothing when rec is nil). The writes run one after the other,
// under one Budget taken from ctx: a stopping manager cancels them, and a slow apiserver costs this call at most
// Budget (a pass that records at several points waits at most Budget at each). Writing them in the pass rather than from a queue keeps their order and needs no goroutine that
// outlives the pass; a write the budget cuts short is logged and dropped, as events are best effort.
func Record(ctx context.Context, rec events.EventRecorder, regarding runtime.Object, evs ...Event) {
	if rec == nil || len(evs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, Budget)
	defer cancel()
	for _, e := range evs {
		if ctx.Err() != nil {
			log.FromContext(ctx).Info("Event budget spent, dropping an event", "reason", e.Reason)
			continue
		}
		note := truncate(e.Note)
		if cr, ok := rec.(contextRecorder); ok {
			cr.EventfContext(ctx, regarding, e.Related, e.Type, e.Reason, e.Action, "%s", note)
		} else {
			rec.Eventf(regarding, e.Related, e.Type, e.Reason, e.Action, "%s", note)
		}
	}
}

// Subject is obj as its events refer to it: its kind, name, namespace and UID, without the resourceVersion that
// every status write changes, so that repeated events fold into one series.
func Subject[T any, PT interface {
	*T
	client.Object
}](obj PT) PT {
	s := PT(new(T))
	s.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	s.SetName(obj.GetName())
	s.SetNamespace(obj.GetNamespace())
	s.SetUID(obj.GetUID())
	return s
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
