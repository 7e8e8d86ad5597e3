package sizer

import (
	"encoding/json"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/keelson-dev/keelson/controllers/internal/managedfields"
)

// fieldSet is the part of a workload's fields a sizer can own: replicas, each container's resource quantities
// (keyed "requests/cpu", "limits/memory") and each container's environment variables.
type fieldSet struct {
	replicas  bool
	resources map[string]map[string]bool // container → "requests/cpu"
	env       map[string]map[string]bool // container → variable name
}

func (s *fieldSet) addResource(container, key string) {
	s.resources = addTo(s.resources, container, key)
}
func (s *fieldSet) addEnv(container, name string) { s.env = addTo(s.env, container, name) }

func addTo(m map[string]map[string]bool, container, key string) map[string]map[string]bool {
	if m == nil {
		m = map[string]map[string]bool{}
	}
	if m[container] == nil {
		m[container] = map[string]bool{}
	}
	m[container][key] = true
	return m
}

// empty reports whether the set holds no field.
func (s fieldSet) empty() bool {
	return !s.replicas && countLeaves(s.resources) == 0 && countLeaves(s.env) == 0
}

func countLeaves(m map[string]map[string]bool) int {
	n := 0
	for _, keys := range m {
		n += len(keys)
	}
	return n
}

// minus is the set of fields in s and not in other: what a sizer owns and no longer applies.
func (s fieldSet) minus(other fieldSet) fieldSet {
	out := fieldSet{replicas: s.replicas && !other.replicas}
	for c, keys := range s.resources {
		for k := range keys {
			if !other.resources[c][k] {
				out.addResource(c, k)
			}
		}
	}
	for c, names := range s.env {
		for n := range names {
			if !other.env[c][n] {
				out.addEnv(c, n)
			}
		}
	}
	return out
}

// toHandOver is what of released (fields the sizer owns and no longer applies) a hand-over keeps for others. On a
// user's workload that is all of it: the user's value stays. On a target the sizer created, it is only the replica
// count (unsetting size keeps the size): its template is the sizer's spec.template, so a variable or a limit removed
// from there must leave the workload with the apply, not stay owned by no one.
func toHandOver(released fieldSet, created bool) fieldSet {
	if created {
		return fieldSet{replicas: released.replicas}
	}
	return released
}

// intersect is the set of fields in both s and other.
func (s fieldSet) intersect(other fieldSet) fieldSet { return s.minus(s.minus(other)) }

// union is the set of fields in s or other.
func (s fieldSet) union(other fieldSet) fieldSet {
	out := fieldSet{replicas: s.replicas || other.replicas}
	for _, set := range []fieldSet{s, other} {
		for c, keys := range set.resources {
			for k := range keys {
				out.addResource(c, k)
			}
		}
		for c, names := range set.env {
			for n := range names {
				out.addEnv(c, n)
			}
		}
	}
	return out
}

// String lists the fields, sorted, for messages and logs.
func (s fieldSet) String() string {
	var parts []string
	if s.replicas {
		parts = append(parts, "spec.replicas")
	}
	for c, keys := range s.resources {
		for k := range keys {
			parts = append(parts, "container "+c+" resources."+strings.ReplaceAll(k, "/", "."))
		}
	}
	for c, names := range s.env {
		for n := range names {
			parts = append(parts, "container "+c+" env "+n)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// appliedFields is the fieldSet of an apply configuration of a Deployment or StatefulSet (they share the JSON
// shape of spec.replicas and spec.template.spec.containers).
func appliedFields(ac any) fieldSet {
	var shape struct {
		Spec struct {
			Replicas *int32 `json:"replicas"`
			Template struct {
				Spec struct {
					Containers []struct {
						Name      string `json:"name"`
						Resources struct {
							Requests map[string]any `json:"requests"`
							Limits   map[string]any `json:"limits"`
						} `json:"resources"`
						Env []struct {
							Name string `json:"name"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	b, err := json.Marshal(ac)
	if err != nil {
		return fieldSet{}
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		return fieldSet{}
	}
	out := fieldSet{replicas: shape.Spec.Replicas != nil}
	for _, c := range shape.Spec.Template.Spec.Containers {
		for name := range c.Resources.Requests {
			out.addResource(c.Name, "requests/"+name)
		}
		for name := range c.Resources.Limits {
			out.addResource(c.Name, "limits/"+name)
		}
		for _, e := range c.Env {
			out.addEnv(c.Name, e.Name)
		}
	}
	return out
}

// ownedFields reads, from obj's managedFields, the fields the given managers own (the FieldsV1 trie:
// f:spec → f:replicas, and f:spec → f:template → f:spec → f:containers → k:{"name":…} → f:resources / f:env).
func ownedFields(obj metav1.Object, managers ...string) fieldSet {
	var out fieldSet
	for _, e := range obj.GetManagedFields() {
		if !managedfields.AppliedBy(e, managers...) {
			continue
		}
		trie, ok := managedfields.Decode(e)
		if !ok {
			continue
		}
		if _, ok := managedfields.Walk(trie, "f:spec")["f:replicas"]; ok {
			out.replicas = true
		}
		for key, sub := range managedfields.Walk(trie, "f:spec", "f:template", "f:spec", "f:containers") {
			container, ok := managedfields.KeyName(key)
			if !ok {
				continue
			}
			subMap, _ := sub.(map[string]any)
			for _, kind := range []string{"requests", "limits"} {
				for name := range managedfields.Walk(subMap, "f:resources", "f:"+kind) {
					if res, ok := strings.CutPrefix(name, "f:"); ok {
						out.addResource(container, kind+"/"+res)
					}
				}
			}
			for envKey := range managedfields.Walk(subMap, "f:env") {
				if name, ok := managedfields.KeyName(envKey); ok {
					out.addEnv(container, name)
				}
			}
		}
	}
	return out
}

// envWithOwners returns, per container, the environment variables some field manager (any, of any operation)
// owns in obj's pod template.
func envWithOwners(obj metav1.Object) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, e := range obj.GetManagedFields() {
		if e.Subresource != "" {
			continue
		}
		trie, ok := managedfields.Decode(e)
		if !ok {
			continue
		}
		for key, sub := range managedfields.Walk(trie, "f:spec", "f:template", "f:spec", "f:containers") {
			container, ok := managedfields.KeyName(key)
			if !ok {
				continue
			}
			subMap, _ := sub.(map[string]any)
			for envKey := range managedfields.Walk(subMap, "f:env") {
				if name, ok := managedfields.KeyName(envKey); ok {
					out = addTo(out, container, name)
				}
			}
		}
	}
	return out
}

// handOver rewrites managedFields so that the given managers no longer own the released fields, and renames the
// entries of the legacy managers to manager. The values stay as they are: a field nobody owns any more is not
// removed by the next apply, which is what giving a field up must mean (an apply that merely leaves a field out
// removes it, or resets it to its default, when its manager was the only owner). changed is false when there was
// nothing to rewrite.
func handOver(entries []metav1.ManagedFieldsEntry, manager string, legacy []string, released fieldSet) (out []metav1.ManagedFieldsEntry, changed bool) {
	ours := append([]string{manager}, legacy...)
	for _, e := range entries {
		if !managedfields.AppliedBy(e, ours...) {
			out = append(out, e)
			continue
		}
		trie, ok := managedfields.Decode(e)
		if !ok {
			out = append(out, e)
			continue
		}
		removed := removeFields(trie, released)
		if e.Manager != manager {
			// A legacy entry may cover a whole workload (one the sizer created and later let go): only what a
			// sizer writes to a workload it did not create passes to its own manager; the rest is given up.
			trie = sizerSubtree(trie)
			e.Manager, changed, removed = manager, true, true
		}
		if removed {
			changed = true
			prune(trie)
			if len(trie) == 0 {
				continue // nothing left: the entry goes
			}
			e.FieldsV1 = managedfields.Encode(trie)
		}
		out = append(out, e)
	}
	return mergeSameManager(out), changed
}

// mergeSameManager folds two Apply entries of one manager and API version into one (a legacy entry renamed next
// to a current one), since the apiserver keeps at most one per manager, operation and version.
func mergeSameManager(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	index := map[string]int{}
	for _, e := range entries {
		key := e.Manager + "\x00" + string(e.Operation) + "\x00" + e.APIVersion + "\x00" + e.Subresource
		i, seen := index[key]
		if !seen || e.FieldsV1 == nil || out[i].FieldsV1 == nil {
			index[key] = len(out)
			out = append(out, e)
			continue
		}
		a, okA := managedfields.Decode(out[i])
		b, okB := managedfields.Decode(e)
		if !okA || !okB {
			out = append(out, e)
			continue
		}
		managedfields.Merge(a, b)
		out[i].FieldsV1 = managedfields.Encode(a)
	}
	return out
}

// sizerSubtree keeps, of a FieldsV1 trie, only what a sizer writes to a workload it did not create: replicas and
// each container's resources and environment (the containers themselves stay their owners').
func sizerSubtree(trie map[string]any) map[string]any {
	spec := map[string]any{}
	if r, ok := managedfields.Walk(trie, "f:spec")["f:replicas"]; ok {
		spec["f:replicas"] = r
	}
	containers := map[string]any{}
	for key, sub := range managedfields.Walk(trie, "f:spec", "f:template", "f:spec", "f:containers") {
		subMap, _ := sub.(map[string]any)
		kept := map[string]any{}
		for _, f := range []string{"f:resources", "f:env"} {
			if v, ok := subMap[f]; ok {
				kept[f] = v
			}
		}
		if len(kept) > 0 {
			containers[key] = kept
		}
	}
	if len(containers) > 0 {
		spec["f:template"] = map[string]any{"f:spec": map[string]any{"f:containers": containers}}
	}
	if len(spec) == 0 {
		return map[string]any{}
	}
	return map[string]any{"f:spec": spec}
}

// removeFields deletes the released fields from a FieldsV1 trie and reports whether it deleted any.
func removeFields(trie map[string]any, released fieldSet) bool {
	removed := false
	if released.replicas {
		if spec := managedfields.Walk(trie, "f:spec"); spec != nil {
			if _, ok := spec["f:replicas"]; ok {
				delete(spec, "f:replicas")
				removed = true
			}
		}
	}
	containers := managedfields.Walk(trie, "f:spec", "f:template", "f:spec", "f:containers")
	for key, sub := range containers {
		container, ok := managedfields.KeyName(key)
		if !ok {
			continue
		}
		subMap, _ := sub.(map[string]any)
		for k := range released.resources[container] {
			kind, res, _ := strings.Cut(k, "/")
			if list := managedfields.Walk(subMap, "f:resources", "f:"+kind); list != nil {
				if _, ok := list["f:"+res]; ok {
					delete(list, "f:"+res)
					removed = true
				}
			}
		}
		if env := managedfields.Walk(subMap, "f:env"); env != nil {
			for envKey := range env {
				if name, ok := managedfields.KeyName(envKey); ok && released.env[container][name] {
					delete(env, envKey)
					removed = true
				}
			}
		}
	}
	return removed
}

// prune removes the maps a removal emptied, and list items that are left with nothing but their key (owning a
// container's name alone would make a later apply that omits the container remove it).
func prune(m map[string]any) {
	for k, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		prune(sub)
		if len(sub) == 0 && k != "." && !isLeaf(k) {
			delete(m, k)
			continue
		}
		if strings.HasPrefix(k, "k:") && onlyKey(sub) {
			delete(m, k)
		}
	}
}

// isLeaf: in FieldsV1 a leaf field is an empty map ("f:image": {}); a map that became empty after a removal was a
// parent. Leaves are told apart by never having held children: we only remove below f:resources.f:requests,
// f:resources.f:limits, f:env and f:spec, so a parent of a removed field is one of those names.
func isLeaf(k string) bool {
	switch k {
	case "f:spec", "f:template", "f:containers", "f:resources", "f:requests", "f:limits", "f:env":
		return false
	}
	return !strings.HasPrefix(k, "k:")
}

// onlyKey reports whether a list item's entry holds nothing but "." and its key field f:name.
func onlyKey(item map[string]any) bool {
	for k := range item {
		if k != "." && k != "f:name" {
			return false
		}
	}
	return true
}
