package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// The event writes of a pass end with the pass: a cancelled reconcile context (the manager stopping) ends them at
// once, however slow the apiserver, rather than each waiting out a timeout of its own.
func TestEventWritesEndWithThePass(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := inferencev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// An apiserver that never answers an event write.
	hanging := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			<-ctx.Done()
			return ctx.Err()
		}})
	r := &Reconciler{Recorder: &EventWriter{Client: hanging, Controller: "test"}}
	p := sample()
	troubled := func(name string) inferencev1alpha1.StepStatus {
		return inferencev1alpha1.StepStatus{Name: name, Phase: inferencev1alpha1.PhaseFailed, Reason: inferencev1alpha1.ReasonImagePull, Message: "no image"}
	}
	cur := inferencev1alpha1.PipelineStatus{Phase: inferencev1alpha1.PhaseFailed,
		Steps: []inferencev1alpha1.StepStatus{troubled("a"), troubled("b"), troubled("c")}}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		r.recordTransitions(ctx, p, inferencev1alpha1.PipelineStatus{}, cur)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(eventWriteTimeout):
		t.Fatalf("the event writes of a cancelled pass were still running after %s", eventWriteTimeout)
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
