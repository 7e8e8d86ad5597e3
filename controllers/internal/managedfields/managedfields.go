// Package managedfields reads and rewrites an object's managedFields: which field manager owns which fields, as
// the apiserver records them for server-side apply.
//
// A controller needs this where server-side apply alone would do the wrong thing: to give up a field while keeping
// its value (an apply that merely leaves out a field its manager alone owns removes it), or to tell its own field
// from someone else's before it writes. Each entry's fields are a FieldsV1 set: a trie whose keys are "f:<field>",
// "k:{<list key>}", "v:<value>" or "i:<index>", a leaf being an empty map.
package managedfields

import (
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Trie is one entry's FieldsV1 set, decoded.
type Trie = map[string]any

// Decode returns e's fields as a Trie, and false when it has none or they do not decode (the apiserver wrote them,
// so a caller skips such an entry rather than failing on it).
func Decode(e metav1.ManagedFieldsEntry) (Trie, bool) {
	if e.FieldsV1 == nil {
		return nil, false
	}
	var t Trie
	if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &t); err != nil {
		return nil, false
	}
	return t, true
}

// Encode returns t as the FieldsV1 of an entry. A Trie holds only maps and the JSON values Decode read, so
// encoding cannot fail.
func Encode(t Trie) *metav1.FieldsV1 {
	b, _ := json.Marshal(t)
	return metav1.NewFieldsV1(string(b))
}

// AppliedBy reports whether e records a server-side apply to the main resource (not a subresource) by one of
// managers.
func AppliedBy(e metav1.ManagedFieldsEntry, managers ...string) bool {
	return e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && slices.Contains(managers, e.Manager)
}

// Walk descends t along path and returns the map found there (nil when some step is absent).
func Walk(t Trie, path ...string) Trie {
	for _, p := range path {
		next, ok := t[p].(map[string]any)
		if !ok {
			return nil
		}
		t = next
	}
	return t
}

// KeyName reads the name out of a list-map key `k:{"name":"x"}` (containers, environment variables), and false
// for any other key.
func KeyName(key string) (string, bool) {
	raw, ok := strings.CutPrefix(key, "k:")
	if !ok {
		return "", false
	}
	var k struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(raw), &k); err != nil || k.Name == "" {
		return "", false
	}
	return k.Name, true
}

// Without returns entries minus those of the given managers (of any operation), and whether there was one to drop.
func Without(entries []metav1.ManagedFieldsEntry, managers ...string) ([]metav1.ManagedFieldsEntry, bool) {
	var out []metav1.ManagedFieldsEntry
	found := false
	for _, e := range entries {
		if slices.Contains(managers, e.Manager) {
			found = true
			continue
		}
		out = append(out, e)
	}
	return out, found
}

// Merge adds to into the fields of from that it lacks, descending into the maps both hold.
func Merge(into, from Trie) {
	for k, v := range from {
		sub, ok := v.(map[string]any)
		dst, ok2 := into[k].(map[string]any)
		if ok && ok2 {
			Merge(dst, sub)
			continue
		}
		if _, exists := into[k]; !exists {
			into[k] = v
		}
	}
}
