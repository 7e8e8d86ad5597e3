package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/keelson-dev/keelson/controllers/internal/passerr"
)

// subject is an object events are about: a ConfigMap stands for any kind.
func subject() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "ns", UID: "uid", ResourceVersion: "7"}}
}

// notes lists the notes of the events written, each with its series count.
func notes(t *testing.T, c client.Client) map[string]int32 {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, e := range list.Items {
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		}
		out[e.Note] = count
	}
	return out
}

// The same event again counts up its series; the same reason with a new note is a new event, so that `kubectl
// events` tells the new cause rather than counting it under the old one.
func TestEventsFoldByWhatTheySay(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	w := New(c, c, "test")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.Now = func() time.Time { clock = clock.Add(SeriesRefresh); return clock } // every repeat is due
	taint := Event{Type: corev1.EventTypeWarning, Reason: "Unschedulable", Action: "Run", Note: "an untolerated taint"}
	gpus := taint
	gpus.Note = "too few free GPUs"
	Record(context.Background(), w, Subject(subject()), taint)
	Record(context.Background(), w, Subject(subject()), taint)
	Record(context.Background(), w, Subject(subject()), gpus)
	got := notes(t, c)
	if len(got) != 2 || got["an untolerated taint"] != 2 || got["too few free GPUs"] != 1 {
		t.Fatalf("events by note and count: %v; want the taint twice in one series and the GPUs once", got)
	}
}

// The first repeat is written at once; a series that keeps repeating then counts up in memory and is written back
// once per SeriesRefresh with its whole count:
// a rollout repeating one event every pass costs a patch a minute, not a patch a pass. A Writer that does not
// remember the event (a restart, another replica) reads its count back.
func TestRepeatsAreWrittenBackOncePerRefresh(t *testing.T) {
	var patches int
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(c, c, "test")
	w.Now = func() time.Time { return clock }
	created := Event{Type: corev1.EventTypeNormal, Reason: "SuccessfulCreate", Action: "Create", Note: "Created pods of revision 1"}
	for range 10 {
		Record(context.Background(), w, subject(), created)
		clock = clock.Add(time.Second)
	}
	if patches != 1 || notes(t, c)[created.Note] != 2 {
		t.Fatalf("10 events within a minute made %d patches and a count of %d; want 1 (the first repeat) and 2", patches, notes(t, c)[created.Note])
	}
	clock = clock.Add(SeriesRefresh)
	Record(context.Background(), w, subject(), created)
	if patches != 2 || notes(t, c)[created.Note] != 11 {
		t.Fatalf("the repeat after a minute made %d patches in all and a count of %d; want 2 and 11", patches, notes(t, c)[created.Note])
	}
	restarted := New(c, c, "test")
	restarted.Now = w.Now
	Record(context.Background(), restarted, subject(), created)
	if patches != 3 || notes(t, c)[created.Note] != 12 {
		t.Fatalf("after a restart: %d patches in all and a count of %d; want 3 and 12", patches, notes(t, c)[created.Note])
	}
}

// Subject keeps what names the object and drops the resourceVersion, which every status write changes.
func TestSubjectDropsTheResourceVersion(t *testing.T) {
	s := Subject(subject())
	if s.Name != "obj" || s.Namespace != "ns" || s.UID != "uid" || s.ResourceVersion != "" || s.Data != nil {
		t.Fatalf("subject %+v", s.ObjectMeta)
	}
}

// The event writes of a pass end with the pass: a cancelled context (the manager stopping) ends them at once,
// however slow the apiserver, rather than each waiting out a timeout of its own.
func TestEventWritesEndWithThePass(t *testing.T) {
	// An apiserver that never answers an event write.
	hanging := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			<-ctx.Done()
			return ctx.Err()
		}})
	w := &Writer{Client: hanging, Controller: "test"}
	evs := []Event{{Type: corev1.EventTypeWarning, Reason: "A", Action: "Run", Note: "a"},
		{Type: corev1.EventTypeWarning, Reason: "B", Action: "Run", Note: "b"},
		{Type: corev1.EventTypeWarning, Reason: "C", Action: "Run", Note: "c"}}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		Record(ctx, w, subject(), evs...)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(WriteTimeout):
		t.Fatalf("the event writes of a cancelled pass were still running after %s", WriteTimeout)
	}
}

// An event refused because its namespace is being deleted is no error worth a log line: every pass of every object
// there would log one until the namespace is gone. Any other refusal is.
func TestEventsRefusedInANamespaceBeingDeletedAreNotErrors(t *testing.T) {
	refusing := func(err error) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return err }}).Build()
	}
	var errorLines []string
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"error"`) {
			errorLines = append(errorLines, args)
		}
	}, funcr.Options{})
	ctx := log.IntoContext(context.Background(), logger)
	ready := Event{Type: corev1.EventTypeNormal, Reason: "Ready", Action: "Ready", Note: "ready"}

	c := refusing(passerr.NewNamespaceTerminating("events", "ns"))
	Record(ctx, New(c, c, "test"), subject(), ready)
	if len(errorLines) != 0 {
		t.Fatalf("logged as errors: %q", errorLines)
	}
	c = refusing(apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no")))
	Record(ctx, New(c, c, "test"), subject(), ready)
	if len(errorLines) != 1 {
		t.Fatalf("a refusal for another reason logged %d error lines, want 1", len(errorLines))
	}
}

// A long note is cut between runes, so that it stays valid UTF-8 and within the apiserver's limit once encoded
// and decoded again (a cut inside a rune becomes a three-byte replacement character).
func TestTruncateKeepsRunes(t *testing.T) {
	for name, note := range map[string]string{
		"cut inside a rune": strings.Repeat("a", maxNote-4) + strings.Repeat("é", 10),
		"all multi-byte":    strings.Repeat("€", 1000),
		"invalid bytes":     strings.Repeat("a", maxNote-4) + "\xff\xfe\xfd\xfc\xfb",
		"short":             "fine",
	} {
		t.Run(name, func(t *testing.T) {
			got := truncate(note)
			if !utf8.ValidString(got) {
				t.Errorf("truncate left invalid UTF-8: %q", got[max(0, len(got)-8):])
			}
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back string
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			if len(back) > maxNote {
				t.Errorf("note is %d bytes after encoding, more than %d", len(back), maxNote)
			}
			if note == "fine" && got != note {
				t.Errorf("a short note changed: %q", got)
			}
		})
	}
}

// quota is a warning that repeats.
var quota = Event{Type: corev1.EventTypeWarning, Reason: "FailedCreate", Action: "Create", Note: "exceeded quota"}

// stoppedWriter is a Writer on a fresh fake apiserver, and its clock, which moves only when the test moves it.
func stoppedWriter() (*Writer, client.Client, *time.Time) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(c, c, "test")
	w.Now = func() time.Time { return clock }
	return w, c, &clock
}

// series reads an event's series count and last observed time from the server.
func seriesOf(t *testing.T, c client.Client, note string) (int32, time.Time) {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Note == note {
			if e.Series == nil {
				return 1, e.EventTime.Time
			}
			return e.Series.Count, e.Series.LastObservedTime.Time
		}
	}
	t.Fatalf("no event says %q", note)
	return 0, time.Time{}
}

// A series that stops repeating within its minute is written back by the next flush, with its whole count and the
// time of its last repeat, and by the last flush when the manager stops, whatever its age; a series not seen for
// the events' lifetime is forgotten.
func TestSeriesThatStopRepeatingAreWrittenBack(t *testing.T) {
	w, c, clock := stoppedWriter()
	for range 10 {
		Record(context.Background(), w, subject(), quota)
		*clock = clock.Add(time.Second)
	}
	lastRepeat := clock.Add(-time.Second)
	if count, _ := seriesOf(t, c, quota.Note); count != 2 {
		t.Fatalf("count before any write-back = %d, want 2 (the first repeat, written at once)", count)
	}
	w.Flush(context.Background(), false)
	if count, _ := seriesOf(t, c, quota.Note); count != 2 {
		t.Fatalf("a flush within the minute wrote the count back: %d", count)
	}
	*clock = clock.Add(SeriesRefresh)
	w.Flush(context.Background(), false)
	count, seen := seriesOf(t, c, quota.Note)
	if count != 10 || !seen.Equal(lastRepeat) {
		t.Fatalf("after a minute: count %d last seen %s; want 10 at %s", count, seen, lastRepeat)
	}

	Record(context.Background(), w, subject(), quota) // within the minute of the last write: counted in memory
	w.Flush(context.Background(), true)               // the manager stops
	if count, _ := seriesOf(t, c, quota.Note); count != 11 {
		t.Fatalf("the last flush wrote a count of %d, want 11", count)
	}

	*clock = clock.Add(eventTTL)
	w.Flush(context.Background(), false)
	if n := len(w.series); n != 0 {
		t.Fatalf("%d series kept past the events' lifetime", n)
	}
}

// A Writer that reads a count back (it does not remember the event) and finds it moved by another writer before its
// own write lands does not set the count back.
func TestACountReadBackIsNotSetBack(t *testing.T) {
	base := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	other := New(base, base, "test")
	other.Now = func() time.Time { return clock }
	Record(context.Background(), other, subject(), quota)

	// This Writer reads the event back, and before its write lands, the other writer counts it up to 40.
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			var moved eventsv1.Event
			if err := c.Get(ctx, key, &moved); err != nil {
				return err
			}
			moved.Series = &eventsv1.EventSeries{Count: 40, LastObservedTime: metav1.NewMicroTime(clock)}
			return c.Update(ctx, &moved)
		}})
	w := New(c, c, "test")
	w.Now = func() time.Time { return clock }
	Record(context.Background(), w, subject(), quota)
	if count, _ := seriesOf(t, base, quota.Note); count != 40 {
		t.Fatalf("count = %d, want the other writer's 40 kept", count)
	}
}

// Past maxSeries, a Writer forgets the series that repeated longest ago, not all of them: the others keep counting
// in memory.
func TestTheOldestSeriesIsForgottenFirst(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(c, c, "test")
	w.Now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	const maxSeries = 16
	w.MaxSeries = maxSeries
	for i := range maxSeries + 1 {
		w.Eventf(subject(), nil, corev1.EventTypeNormal, "Created", "Create", "pod %d", i)
	}
	if n := len(w.series); n != maxSeries {
		t.Fatalf("%d series remembered, want %d", n, maxSeries)
	}
	for k, s := range w.series {
		if s.count != 1 {
			t.Fatalf("series %s has count %d", k, s.count)
		}
	}
	var first eventsv1.EventList
	if err := c.List(context.Background(), &first); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, e := range first.Items {
		if _, ok := w.series[e.Namespace+"/"+e.Name]; ok {
			kept++
		} else if e.Note != "pod 0" {
			t.Fatalf("forgot %q, not the oldest", e.Note)
		}
	}
	if kept != maxSeries {
		t.Fatalf("%d events remembered, want %d", kept, maxSeries)
	}
}

// A series whose repeats are not written yet is kept over an older one whose count is written: forgetting it would
// lose the repeats.
func TestASeriesWithUnwrittenRepeatsIsKept(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(c, c, "test")
	w.Now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	w.MaxSeries = 3
	for range 3 { // the oldest series: repeats counted in memory, written back only at the next minute
		w.Eventf(subject(), nil, corev1.EventTypeWarning, "FailedCreate", "Create", "quota")
	}
	w.Eventf(subject(), nil, corev1.EventTypeNormal, "Created", "Create", "pod 1")
	w.Eventf(subject(), nil, corev1.EventTypeNormal, "Created", "Create", "pod 2")
	w.Eventf(subject(), nil, corev1.EventTypeNormal, "Created", "Create", "pod 3")
	counts := map[int32]int{}
	for _, s := range w.series {
		counts[s.count]++
	}
	if len(w.series) != 3 || counts[3] != 1 {
		t.Fatalf("remembered counts %v; want the series with 3 repeats kept among 3", counts)
	}
}

// When the manager stops, Start writes back every series with repeats not written yet, whatever their age, and
// returns.
func TestStartWritesBackOnStop(t *testing.T) {
	w, c, _ := stoppedWriter()
	for range 5 {
		Record(context.Background(), w, subject(), quota)
	}
	if !w.NeedLeaderElection() {
		t.Fatal("the write-back runs on every replica, not the leader alone")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(FinalFlushTimeout + WriteTimeout):
		t.Fatal("Start did not return once its context ended")
	}
	if count, _ := seriesOf(t, c, quota.Note); count != 5 {
		t.Fatalf("count after the stop = %d, want 5", count)
	}
}
