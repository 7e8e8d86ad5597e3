package recorder

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// WriteTimeout bounds one event write made without a context of its own: an event is worth a short wait, never a
// stuck reconcile.
const WriteTimeout = 5 * time.Second

// Writer records events (events.k8s.io/v1) that fold by what they say. The client-go recorder folds every event
// of the same object, type, action and reason into one series that keeps the first note, so a step whose trouble
// changes cause under the same reason (an untolerated taint, then too few free GPUs: both Unschedulable) would only
// count up an event naming the old cause. Here an event's name is a hash of its object, type, action, reason,
// related object and note: the same event again counts up its series (no spam), a new cause is a new event.
//
// As with the client-go recorder, the first repeat is written at once and a series that keeps repeating then counts
// up in memory, written back at most once per SeriesRefresh: a rollout that repeats one event every pass costs a
// patch a minute, not a patch a pass. Start runs the write-back of series that stopped repeating (their last
// repeats would otherwise never show), every SeriesRefresh and once more when the manager stops.
//
// The writes go through the controller's client, and so share the process's one client budget with its pod and
// status writes: a series that counts up in memory costs that budget a patch a minute at most.
type Writer struct {
	// Client writes the events.
	Client client.Client
	// Reader reads an event back to count up its series: an uncached reader. Events must never go through the
	// manager's cache: a cached Get starts an informer over every event of the cluster, which the controller may
	// not list or watch (its role allows get, create and patch), so each read would wait for a sync that never
	// comes. Nil reads through Client (for a Client that is itself uncached).
	Reader client.Reader
	// Controller and Instance are the reporting controller and instance of every event.
	Controller, Instance string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// MaxSeries bounds the series the Writer remembers (DefaultMaxSeries when 0); past it, it forgets the one that
	// repeated longest ago (a repeat of it then reads its event back).
	MaxSeries int

	mu     sync.Mutex
	series map[string]*series // by namespace/name: the events this Writer wrote, and their counts
}

// SeriesRefresh is how long a series' count may grow in memory before a repeat writes it back.
const SeriesRefresh = time.Minute

// DefaultMaxSeries is how many series a Writer remembers by default: a few hundred bytes each.
const DefaultMaxSeries = 4096

// eventTTL is how long the apiserver keeps an event after its last write (kube-apiserver's --event-ttl default): a
// series not seen for that long is forgotten, its event gone or going.
const eventTTL = time.Hour

// series is what a Writer knows of an event it wrote: how often it happened, the count last written, when that was,
// and when it last happened.
type series struct {
	count   int32
	stored  int32
	written time.Time
	last    time.Time
}

// wrote records that count was written at now. A repeat counted while the write was in flight stays counted, and a
// write that raced a later one never lowers what is known to be stored.
func (s *series) wrote(count int32, now time.Time) {
	s.count = max(s.count, count)
	s.stored = max(s.stored, count)
	s.written = now
}

var _ events.EventRecorder = &Writer{}

// New is a Writer for the given reporting controller, reporting from this host; reader is the uncached reader it
// reads events back with.
func New(c client.Client, reader client.Reader, controller string) *Writer {
	host, _ := os.Hostname()
	return &Writer{Client: c, Reader: reader, Controller: controller, Instance: controller + "-" + host}
}

// ForManager is a Writer for the given reporting controller through the manager's client and uncached reader, its
// write-back (Start) added to the manager's runnables.
func ForManager(mgr manager.Manager, controller string) (*Writer, error) {
	w := New(mgr.GetClient(), mgr.GetAPIReader(), controller)
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("adding the event write-back: %w", err)
	}
	return w, nil
}

// Eventf writes an event, or counts up its series when the same event was written before. A failed write is
// logged and dropped, as the client-go recorder does: events are best effort. Without a context of its own, a
// write is bounded by WriteTimeout; Record calls EventfContext instead.
func (w *Writer) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
	defer cancel()
	w.EventfContext(ctx, regarding, related, eventtype, reason, action, note, args...)
}

// EventfContext is Eventf bounded by ctx: a cancelled ctx (the manager stopping, the pass's event budget spent)
// ends the write at once.
func (w *Writer) EventfContext(ctx context.Context, regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	err := w.write(ctx, regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...))
	switch {
	case passerr.NamespaceTerminating(err):
		// Every pass in a namespace being deleted would log one until it is gone: no error worth a line.
		log.FromContext(ctx).V(1).Info("Not recording an event: the namespace is being deleted", "reason", reason)
	case err != nil:
		log.FromContext(ctx).Error(err, "Recording an event", "reason", reason)
	}
}

// now reads the clock.
func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// reader is the uncached reader, or the client when there is none.
func (w *Writer) reader() client.Reader {
	if w.Reader != nil {
		return w.Reader
	}
	return w.Client
}

func (w *Writer) write(ctx context.Context, regarding, related runtime.Object, eventtype, reason, action, note string) error {
	ref, err := reference.GetReference(w.Client.Scheme(), regarding)
	if err != nil {
		return err
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if relatedRef, err = reference.GetReference(w.Client.Scheme(), related); err != nil {
			return err
		}
	}
	now := w.now() // one reading for the whole write: the event's time, its series' time and what is remembered
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: eventName(ref, relatedRef, eventtype, reason, action, note), Namespace: ref.Namespace},
		EventTime:  metav1.NewMicroTime(now), ReportingController: w.Controller, ReportingInstance: w.Instance,
		Action: action, Reason: reason, Regarding: *ref, Related: relatedRef, Note: note, Type: eventtype,
	}
	key := e.Namespace + "/" + e.Name
	if count, due, known := w.repeat(key, now); known {
		if !due {
			return nil // counted in memory; a later repeat writes it back
		}
		err := w.patchSeries(ctx, e, count, now, "")
		if !apierrors.IsNotFound(err) {
			w.remember(key, count, now, err)
			return err
		}
		w.forget(key) // expired on the server: record it anew
	}
	err = w.Client.Create(ctx, e)
	if !apierrors.IsAlreadyExists(err) {
		w.remember(key, 1, now, err)
		return err
	}
	// The same event again, written before this Writer remembers (another replica, a restart): read its count back.
	var live eventsv1.Event
	if err := w.reader().Get(ctx, client.ObjectKeyFromObject(e), &live); err != nil {
		return err
	}
	count := int32(2)
	if live.Series != nil {
		count = live.Series.Count + 1
	}
	// Under the count's resourceVersion: a writer that raced this one (another replica, a write-back) and wrote a
	// higher count is not set back. Such a repeat is dropped: events are best effort, a count going back is a lie.
	err = w.patchSeries(ctx, e, count, now, live.ResourceVersion)
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("Not counting a repeat: its event was written meanwhile", "event", key)
		return nil
	}
	w.remember(key, count, now, err)
	return err
}

// patchSeries writes an event's series: its count and when it was last seen; under resourceVersion when one is given.
func (w *Writer) patchSeries(ctx context.Context, e *eventsv1.Event, count int32, seen time.Time, resourceVersion string) error {
	var lock string
	if resourceVersion != "" {
		lock = fmt.Sprintf(`"metadata":{"resourceVersion":%q},`, resourceVersion)
	}
	patch := fmt.Sprintf(`{%s"series":{"count":%d,"lastObservedTime":%q}}`, lock, count, metav1.NewMicroTime(seen).Format(metav1.RFC3339Micro))
	return w.Client.Patch(ctx, e, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// repeat counts one more of a remembered event: its new count, whether the count is due to be written back, and
// whether the event was remembered at all. The first repeat is due at once, so that `kubectl events` shows a series
// as soon as there is one; later ones once SeriesRefresh has passed since the last write. A due repeat claims the
// write, so that a repeat racing it is not due too.
func (w *Writer) repeat(key string, now time.Time) (count int32, due, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.series[key]
	if !ok {
		return 0, false, false
	}
	s.count++
	s.last = now
	if s.count == 2 || now.Sub(s.written) >= SeriesRefresh {
		s.written = now
		return s.count, true, true
	}
	return s.count, false, true
}

// remember records that an event's count was written, unless the write failed (the next one tries again).
func (w *Writer) remember(key string, count int32, now time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if s, ok := w.series[key]; ok {
			s.written = time.Time{} // due at the next repeat
		}
		return
	}
	if s, ok := w.series[key]; ok {
		s.wrote(count, now)
		return
	}
	if w.series == nil {
		w.series = map[string]*series{}
	}
	if limit := cmp.Or(w.MaxSeries, DefaultMaxSeries); len(w.series) >= limit {
		w.forgetOldest()
	}
	w.series[key] = &series{count: count, stored: count, written: now, last: now}
}

// forgetOldest drops the series that repeated longest ago, to make room for a new one: of those whose count is
// written, if any (forgetting one whose repeats are not written yet loses them). w.mu is held.
func (w *Writer) forgetOldest() {
	var oldest string
	var at time.Time
	var written bool
	for k, s := range w.series {
		done := s.count == s.stored
		if oldest == "" || (done && !written) || (done == written && s.last.Before(at)) {
			oldest, at, written = k, s.last, done
		}
	}
	delete(w.series, oldest)
}

// forget drops a remembered event.
func (w *Writer) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.series, key)
}

// eventName names an event after its object and a hash of what it says, so that the same event has the same name.
func eventName(regarding, related *corev1.ObjectReference, eventtype, reason, action, note string) string {
	h := sha256.New()
	for _, s := range []string{string(regarding.UID), regarding.Kind, regarding.Name, eventtype, reason, action, note} {
		h.Write([]byte(s + "\x00"))
	}
	if related != nil {
		h.Write([]byte(related.Kind + "\x00" + related.Namespace + "\x00" + related.Name))
	}
	return fmt.Sprintf("%s.%s", regarding.Name, hex.EncodeToString(h.Sum(nil))[:16])
}

// FinalFlushTimeout bounds the write-back when the manager stops. The leader writes it back before it releases
// its lease (after, its writes could race the new leader's), so it delays the handover by as much.
const FinalFlushTimeout = time.Second

// Start writes back, every SeriesRefresh, the counts of series that repeated since their last write, and once more,
// whatever their age, when ctx ends (the manager stopping), within FinalFlushTimeout. It runs on the leader only, as
// the passes that record do.
func (w *Writer) Start(ctx context.Context) error {
	tick := time.NewTicker(SeriesRefresh)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.Flush(ctx, false)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), FinalFlushTimeout)
			w.Flush(final, true)
			cancel()
			return nil
		}
	}
}

// NeedLeaderElection says that only the leader writes events back.
func (w *Writer) NeedLeaderElection() bool { return true }

// Flush writes back the count of every series that repeated since its count was last written and was not written
// for SeriesRefresh (all of them, when all is set), each write within WriteTimeout, and forgets the series not seen
// for eventTTL. Failed writes are logged once per flush and tried again at the next flush or repeat.
func (w *Writer) Flush(ctx context.Context, all bool) {
	type due struct {
		key   string
		s     *series
		count int32
		last  time.Time
	}
	now := w.now()
	var todo []due
	w.mu.Lock()
	for k, s := range w.series {
		switch {
		case now.Sub(s.last) >= eventTTL:
			delete(w.series, k)
		case s.count > s.stored && (all || now.Sub(s.written) >= SeriesRefresh):
			s.written = now // claimed: a repeat racing this write is not due too
			todo = append(todo, due{key: k, s: s, count: s.count, last: s.last})
		}
	}
	w.mu.Unlock()
	var failed []error
	for _, d := range todo {
		if ctx.Err() != nil {
			break
		}
		namespace, name, _ := strings.Cut(d.key, "/")
		e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		wctx, cancel := context.WithTimeout(ctx, WriteTimeout)
		err := w.patchSeries(wctx, e, d.count, d.last, "")
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, err)
		}
		w.settle(d.key, d.s, d.count, now, err)
	}
	if len(failed) > 0 {
		log.FromContext(ctx).Error(failed[0], "Writing back event counts", "failed", len(failed), "of", len(todo))
	}
}

// settle records the outcome of a write-back of series s, unless s is no longer the series remembered under key (the
// event was recorded anew meanwhile: its count starts again, and this write-back's is not its own). An event gone
// from the server (expired) is forgotten: a repeat records it anew.
func (w *Writer) settle(key string, s *series, count int32, now time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.series[key] != s {
		return
	}
	switch {
	case apierrors.IsNotFound(err):
		delete(w.series, key)
	case err != nil:
		s.written = time.Time{} // due at the next flush or repeat
	default:
		s.wrote(count, now)
	}
}
