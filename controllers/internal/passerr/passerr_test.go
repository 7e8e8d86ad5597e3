package passerr

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Every error a pass joined is looked at, wherever it sits: a refusal for a namespace being deleted is dropped
// whether it comes first, last or alone, and what else went wrong stays; refusals alone are only that.
func TestRemaining(t *testing.T) {
	terminating := NewNamespaceTerminating("pods", "ns")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("modified"))
	other := errors.New("boom")
	for _, tc := range []struct {
		name string
		err  error
		want []error
	}{
		{"none", nil, nil},
		{"alone", fmt.Errorf("creating a pod: %w", terminating), nil},
		{"joined, all refused", errors.Join(terminating, fmt.Errorf("again: %w", terminating)), nil},
		{"refused first", errors.Join(terminating, other), []error{other}},
		{"refused last", fmt.Errorf("pass: %w", errors.Join(conflict, terminating)), []error{conflict}},
		{"none refused", errors.Join(conflict, other), []error{conflict, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Remaining(tc.err)
			if only := tc.err != nil && tc.want == nil; OnlyNamespaceTerminating(tc.err) != only {
				t.Errorf("OnlyNamespaceTerminating = %v, want %v", !only, only)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Remaining = %v, want %v", got, tc.want)
			}
			for i := range got {
				if !errors.Is(got[i], tc.want[i]) {
					t.Fatalf("Remaining = %v, want %v", got, tc.want)
				}
			}
		})
	}
	if !NamespaceTerminating(fmt.Errorf("wrapped: %w", terminating)) || NamespaceTerminating(other) {
		t.Error("NamespaceTerminating misreads a refusal")
	}
	if !All([]error{conflict, conflict}, apierrors.IsConflict) || All([]error{conflict, other}, apierrors.IsConflict) || All(nil, apierrors.IsConflict) {
		t.Error("All")
	}
}

// An object gone is forgotten and no error; any other read error is the pass's, and forgets nothing.
func TestGone(t *testing.T) {
	forgotten := 0
	forget := func() { forgotten++ }
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	if res, err := Gone(fmt.Errorf("reading: %w", notFound), forget); err != nil || res.RequeueAfter != 0 || forgotten != 1 {
		t.Errorf("gone: %+v, %v, forgotten %d times; want no error, forgotten once", res, err, forgotten)
	}
	boom := errors.New("boom")
	if _, err := Gone(boom, forget); !errors.Is(err, boom) || forgotten != 1 {
		t.Errorf("another error: %v, forgotten %d times; want the error, nothing forgotten", err, forgotten)
	}
}
