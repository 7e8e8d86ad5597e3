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
