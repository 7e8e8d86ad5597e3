package pipeline

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/controllers/internal/apply"
)

// needsApply reports whether desired must be applied over existing (nil when it does not exist yet). The stored
// hash says whether the spec changed since the last apply (the only way to see a field the controller stopped
// setting); for a step's Deployment and Service the live fields are compared too, so `kubectl scale` or
// `kubectl edit` on them is undone. The volume and the claim are not compared: their specs are immutable once bound,
// and the binder fills fields (claimRef.uid) that an apply of the atomic claimRef would wipe.
func needsApply(existing, desired client.Object) (bool, error) {
	if existing == nil {
		return true, nil
	}
	needed, err := apply.Needed(existing, desired)
	if err != nil || needed {
		return needed, err
	}
	switch desired.(type) {
	case *appsv1.Deployment, *corev1.Service:
		ok, err := holds(existing, desired)
		return !ok, err
	}
	return false, nil
}

// holds reports whether live carries desired's labels, owner references and spec.
func holds(live, desired client.Object) (bool, error) {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, fmt.Errorf("converting %s: %w", live.GetName(), err)
	}
	d, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return false, fmt.Errorf("converting %s: %w", desired.GetName(), err)
	}
	lm, _ := l["metadata"].(map[string]any)
	dm, _ := d["metadata"].(map[string]any)
	return covers(lm["labels"], dm["labels"]) && covers(lm["ownerReferences"], dm["ownerReferences"]) &&
		covers(l["spec"], d["spec"]), nil
}

// covers reports whether live holds every field that desired sets, with desired's value. It follows server-side
// apply, so that what it calls a difference is one an apply removes (else every pass would apply again):
//   - maps may hold more keys than desired: fields someone else set, which an apply leaves alone;
//   - lists of objects with a key (name, uid, mountPath, containerPort, port) are merged by that key by an apply,
//     so live may hold more elements, and each of desired's must be covered by live's element of the same key;
//   - other lists are atomic (an apply replaces them whole): the same length, covered element by element;
//   - null and empty values in desired set nothing.
//
// Values the apiserver defaults (a port's protocol, a probe's thresholds) are absent from desired, so they never
// count as a difference.
func covers(live, desired any) bool {
	switch d := desired.(type) {
	case nil:
		return true
	case map[string]any:
		l, _ := live.(map[string]any)
		for k, dv := range d {
			if !covers(l[k], dv) {
				return false
			}
		}
		return true
	case []any:
		l, _ := live.([]any)
		if len(d) == 0 {
			return true
		}
		if key := listKey(d); key != "" {
			for _, de := range d {
				if !covers(elementWith(l, key, de.(map[string]any)[key]), de) {
					return false
				}
			}
			return true
		}
		if len(l) != len(d) {
			return false
		}
		for i := range d {
			if !covers(l[i], d[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(live, desired)
	}
}

// listKeys are the keys by which server-side apply merges the lists of the objects the controller writes (owner
// references, containers, env, volumes, volume mounts, container and Service ports), in order of preference.
var listKeys = []string{"uid", "mountPath", "containerPort", "port", "name"}

// listKey is the key by which a list of objects is merged, or "" for an atomic list.
func listKey(list []any) string {
	for _, k := range listKeys {
		all := true
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok || m[k] == nil {
				all = false
				break
			}
		}
		if all {
			return k
		}
	}
	return ""
}

// elementWith returns the element of list whose key has the value v, or nil.
func elementWith(list []any, key string, v any) any {
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && reflect.DeepEqual(m[key], v) {
			return m
		}
	}
	return nil
}
