package sizer

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// The sizer's entry as the apiserver writes it: replicas, one container's cpu request and GOMAXPROCS.
const sizerFields = `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},` +
	`"f:env":{"k:{\"name\":\"GOMAXPROCS\"}":{".":{},"f:name":{},"f:value":{}}},"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}}`

func TestOwnedFields(t *testing.T) {
	obj := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("mine", sizerFields), entry("user", `{"f:spec":{"f:paused":{}}}`)}}
	got := ownedFields(obj, "mine")
	want := fieldSet{replicas: true, resources: map[string]map[string]bool{"app": {"requests/cpu": true}},
		env: map[string]map[string]bool{"app": {"GOMAXPROCS": true}}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(fieldSet{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !ownedFields(obj, "someone").empty() {
		t.Error("another manager's fields are not the sizer's")
	}
}

func TestHandOver(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{entry("user", `{"f:spec":{"f:paused":{}}}`), entry("old", sizerFields)}
	released := fieldSet{replicas: true, env: map[string]map[string]bool{"app": {"GOMAXPROCS": true}}}
	got, changed := handOver(entries, "new", []string{"old"}, released)
	if !changed {
		t.Fatal("expected a change")
	}
	if len(got) != 2 || got[0].Manager != "user" || got[1].Manager != "new" {
		t.Fatalf("entries: %+v", got)
	}
	var trie map[string]any
	if err := json.Unmarshal(got[1].FieldsV1.GetRawBytes(), &trie); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
		`k:{"name":"app"}`: map[string]any{
			"f:resources": map[string]any{"f:requests": map[string]any{"f:cpu": map[string]any{}}}}}}}}}
	if diff := cmp.Diff(want, trie); diff != "" {
		t.Errorf("remaining fields (-want +got):\n%s", diff)
	}

	// Releasing the rest leaves nothing of the sizer's: its entry goes.
	rest := fieldSet{resources: map[string]map[string]bool{"app": {"requests/cpu": true}}}
	got, _ = handOver(got, "new", nil, rest)
	if len(got) != 1 || got[0].Manager != "user" {
		t.Errorf("entries after releasing everything: %+v", got)
	}

	// Nothing to release and nothing to rename: no change.
	if _, changed := handOver(entries, "old", nil, fieldSet{}); changed {
		t.Error("nothing to hand over must not rewrite managedFields")
	}
}

func TestFieldSetMinus(t *testing.T) {
	owned := fieldSet{replicas: true, env: map[string]map[string]bool{"app": {"A": true, "B": true}}}
	applying := fieldSet{env: map[string]map[string]bool{"app": {"A": true}}}
	got := owned.minus(applying)
	if got.String() != "container app env B, spec.replicas" {
		t.Errorf("got %q", got.String())
	}
	if !applying.minus(owned).empty() {
		t.Error("nothing owned is released")
	}
}

// A user's workload keeps every value the sizer lets go; a target the sizer created keeps only its replica count,
// and the rest follows the sizer's template.
func TestToHandOver(t *testing.T) {
	released := fieldSet{replicas: true, env: map[string]map[string]bool{"app": {"B": true}}}
	released.addResource("app", "limits/memory")
	if got := toHandOver(released, false); got.String() != released.String() {
		t.Errorf("a user's workload: got %q, want %q", got, released)
	}
	if got := toHandOver(released, true); got.String() != "spec.replicas" {
		t.Errorf("a created target: got %q, want spec.replicas only", got)
	}
}

// A legacy entry renamed to a sizer's own manager keeps only what a sizer writes to a workload: a whole-object entry
// (a workload the sizer created, then let go) must not make the sizer own the image or the selector.
func TestHandOverRenamesOnlySizerFields(t *testing.T) {
	whole := `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:spec":{"f:containers":` +
		`{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}}`
	got, changed := handOver([]metav1.ManagedFieldsEntry{entry("old", whole)}, "new", []string{"old"}, fieldSet{})
	if !changed || len(got) != 1 || got[0].Manager != "new" {
		t.Fatalf("entries: %+v", got)
	}
	want := `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}}`
	if got[0].FieldsV1.GetRawString() != want {
		t.Errorf("fields:\n got %s\nwant %s", got[0].FieldsV1.GetRawString(), want)
	}
}

func TestFieldSetIntersect(t *testing.T) {
	a := fieldSet{replicas: true, env: map[string]map[string]bool{"app": {"A": true, "B": true}}}
	b := fieldSet{env: map[string]map[string]bool{"app": {"B": true, "C": true}}}
	if got := a.intersect(b).String(); got != "container app env B" {
		t.Errorf("got %q", got)
	}
}
