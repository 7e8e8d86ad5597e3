package statuswrite

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

type budget struct {
	Name    string `json:"name"`
	Allowed int32  `json:"allowed,omitempty"`
}

type status struct {
	ObservedGeneration int64    `json:"observedGeneration,omitempty"`
	Ready              int32    `json:"ready"`
	Available          int32    `json:"available,omitempty"`
	Items              []string `json:"items,omitempty"`
	Budget             *budget  `json:"budget,omitempty"`
	Inline             budget   `json:"inline"`
	Hidden             string   `json:"-"`
}

func (s *status) DeepCopy() *status {
	out := *s
	out.Items = append([]string(nil), s.Items...)
	if s.Budget != nil {
		b := *s.Budget
		out.Budget = &b
	}
	return &out
}

// Every field of the status, and of every struct in it, is stated: a value, or null for what marshals away when
// zero, so that nothing stored survives that the new status lacks.
func TestPatchStatesEveryField(t *testing.T) {
	for name, tc := range map[string]struct {
		in   any
		want string
	}{
		"zero": {status{}, `{"status":{"available":null,"budget":null,"inline":{"allowed":null,"name":""},` +
			`"items":null,"observedGeneration":null,"ready":0}}`},
		"pointer": {&status{ObservedGeneration: 3, Available: 2}, `{"status":{"available":2,"budget":null,` +
			`"inline":{"allowed":null,"name":""},"items":null,"observedGeneration":3,"ready":0}}`},
		"nested": {status{Budget: &budget{Name: "b"}, Inline: budget{Allowed: 1}, Items: []string{"x"}},
			`{"status":{"available":null,"budget":{"allowed":null,"name":"b"},"inline":{"allowed":1,"name":""},` +
				`"items":["x"],"observedGeneration":null,"ready":0}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Patch(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("patch (-want +got):\n%s", d)
			}
		})
	}
}

// What was written is what Current returns, for that object only (a new object of the same name has another UID),
// as a copy a pass may change; forgotten, the cached status is current again.
func TestWrittenIsCurrentUntilForgotten(t *testing.T) {
	var w Written[*status]
	cached := &status{Ready: 1}
	if got := w.Current("ns/a", "u1", cached); got != cached {
		t.Fatalf("nothing written: got %+v, want the cached status", got)
	}
	written := &status{Ready: 2, Items: []string{"x"}}
	w.Wrote("ns/a", "u1", written)
	written.Items[0] = "changed after the write"

	got := w.Current("ns/a", "u1", cached)
	if got.Ready != 2 || got.Items[0] != "x" {
		t.Fatalf("current = %+v, want the status written, as it was written", got)
	}
	got.Items[0] = "changed by a pass"
	if again := w.Current("ns/a", "u1", cached); again.Items[0] != "x" {
		t.Fatalf("a pass's change reached what is remembered: %+v", again)
	}
	if got := w.Current("ns/a", types.UID("u2"), cached); got != cached {
		t.Fatalf("another object of the same name: got %+v, want the cached status", got)
	}
	if got := w.Current("ns/b", "u1", cached); got != cached {
		t.Fatalf("another key: got %+v, want the cached status", got)
	}
	w.Forget("ns/a")
	if got := w.Current("ns/a", "u1", cached); got != cached || w.Len() != 0 {
		t.Fatalf("forgotten: got %+v (%d remembered), want the cached status and nothing remembered", got, w.Len())
	}
}
