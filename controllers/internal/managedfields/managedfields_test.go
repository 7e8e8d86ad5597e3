package managedfields

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource}
	if fields != "" {
		e.FieldsV1 = metav1.NewFieldsV1(fields)
	}
	return e
}

func TestDecodeSkipsWhatItCannotRead(t *testing.T) {
	for name, fields := range map[string]string{"no fields": "", "not JSON": "{", "not an object": "[1]"} {
		if trie, ok := Decode(entry("m", metav1.ManagedFieldsOperationApply, "", fields)); ok || trie != nil {
			t.Errorf("%s: Decode = %v, %v; want nil, false", name, trie, ok)
		}
	}
	const fields = `{"f:spec":{"f:replicas":{}}}`
	trie, ok := Decode(entry("m", metav1.ManagedFieldsOperationApply, "", fields))
	if !ok {
		t.Fatal("Decode refused a FieldsV1 set")
	}
	if got := string(Encode(trie).GetRawBytes()); got != fields {
		t.Errorf("Encode(Decode(%s)) = %s", fields, got)
	}
}

func TestAppliedBy(t *testing.T) {
	cases := map[string]struct {
		e    metav1.ManagedFieldsEntry
		want bool
	}{
		"an apply by one of the managers": {entry("b", metav1.ManagedFieldsOperationApply, "", ""), true},
		"an update by one of them":        {entry("a", metav1.ManagedFieldsOperationUpdate, "", ""), false},
		"an apply to a subresource":       {entry("a", metav1.ManagedFieldsOperationApply, "status", ""), false},
		"an apply by another manager":     {entry("c", metav1.ManagedFieldsOperationApply, "", ""), false},
	}
	for name, c := range cases {
		if got := AppliedBy(c.e, "a", "b"); got != c.want {
			t.Errorf("%s: AppliedBy = %v, want %v", name, got, c.want)
		}
	}
}

func TestWalk(t *testing.T) {
	trie, _ := Decode(entry("m", metav1.ManagedFieldsOperationApply, "",
		`{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{}}}}}}}`))
	if got := Walk(trie, "f:spec", "f:template", "f:spec", "f:containers"); len(got) != 1 {
		t.Errorf("Walk to the containers = %v, want the one container", got)
	}
	for _, path := range [][]string{{"f:status"}, {"f:spec", "f:replicas", "f:deeper"}} {
		if got := Walk(trie, path...); len(got) != 0 {
			t.Errorf("Walk(%v) = %v, want nothing", path, got)
		}
	}
	if got := Walk(nil, "f:spec"); got != nil {
		t.Errorf("Walk(nil) = %v, want nil", got)
	}
}

func TestKeyName(t *testing.T) {
	cases := map[string]struct {
		name string
		ok   bool
	}{
		`k:{"name":"app"}`:                    {"app", true},
		`k:{"port":80,"protocol":"TCP"}`:      {"", false},
		`k:{"name":""}`:                       {"", false},
		`f:name`:                              {"", false},
		`k:{not json`:                         {"", false},
		`k:{"name":"GOMEMLIMIT","value":"x"}`: {"GOMEMLIMIT", true},
	}
	for key, want := range cases {
		if name, ok := KeyName(key); name != want.name || ok != want.ok {
			t.Errorf("KeyName(%s) = %q, %v; want %q, %v", key, name, ok, want.name, want.ok)
		}
	}
}

func TestWithout(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry("a", metav1.ManagedFieldsOperationApply, "", ""),
		entry("b", metav1.ManagedFieldsOperationUpdate, "", ""),
		entry("c", metav1.ManagedFieldsOperationApply, "", ""),
	}
	out, found := Without(entries, "b", "z")
	if !found || len(out) != 2 || out[0].Manager != "a" || out[1].Manager != "c" {
		t.Errorf("Without(b, z) = %v, %v; want a and c, true", out, found)
	}
	if out, found := Without(entries, "z"); found || len(out) != 3 {
		t.Errorf("Without(z) = %v, %v; want all three, false", out, found)
	}
}

func TestMergeKeepsWhatIntoHolds(t *testing.T) {
	into, _ := Decode(entry("m", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`))
	from, _ := Decode(entry("m", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:paused":{}},"f:metadata":"x"}`))
	Merge(into, from)
	want, _ := Decode(entry("m", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{},"f:paused":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`))
	if diff := cmp.Diff(want, into); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
}
