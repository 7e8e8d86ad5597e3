package sizer

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// AllContainers is the containerName that applies to every container without an entry of its own.
const AllContainers = "*"

// policyFor returns the resource policy for the named container: its own entry, else the "*" entry, else nil.
func policyFor(policies []sizerv1alpha1.ContainerResources, container string) *sizerv1alpha1.ContainerResources {
	var all *sizerv1alpha1.ContainerResources
	for i := range policies {
		switch policies[i].ContainerName {
		case container:
			return &policies[i]
		case AllContainers:
			all = &policies[i]
		}
	}
	return all
}

// bound clamps every quantity of list into [min, max] where those name the same resource.
func bound(list, minAllowed, maxAllowed corev1.ResourceList) corev1.ResourceList {
	if list == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, q := range list {
		v := q.DeepCopy()
		if lo, ok := minAllowed[name]; ok && v.Cmp(lo) < 0 {
			v = lo.DeepCopy()
		}
		if hi, ok := maxAllowed[name]; ok && v.Cmp(hi) > 0 {
			v = hi.DeepCopy()
		}
		out[name] = v
	}
	return out
}

// desiredResources computes, for each of the target's containers that a policy covers, the requests and limits to
// write: the policy's values clamped to its bounds, limits only with RequestsAndLimits. A request it writes is never
// left above its limit: when bounding, or the workload's own limit of that resource, would put it there, the request
// is lowered to the limit. (A limit it writes below a request it leaves to the workload is the apiserver's to
// refuse: the sizer writes only what its entry names.)
func desiredResources(policies []sizerv1alpha1.ContainerResources, containers []corev1.Container) []sizerv1alpha1.AppliedResources {
	var out []sizerv1alpha1.AppliedResources
	for _, c := range containers {
		p := policyFor(policies, c.Name)
		if p == nil {
			continue
		}
		applied := sizerv1alpha1.AppliedResources{ContainerName: c.Name,
			Requests: bound(p.Requests, p.MinAllowed, p.MaxAllowed)}
		if p.ControlledValues != sizerv1alpha1.RequestsOnly {
			applied.Limits = bound(p.Limits, p.MinAllowed, p.MaxAllowed)
		}
		// The limits in force are the entry's over the workload's own, key by key (both go into the template).
		limits := effectiveLimits(c, []sizerv1alpha1.AppliedResources{applied})
		for name, req := range applied.Requests {
			if lim, ok := limits[name]; ok && req.Cmp(lim) > 0 {
				applied.Requests[name] = lim.DeepCopy()
			}
		}
		if len(applied.Requests) == 0 && len(applied.Limits) == 0 {
			continue
		}
		out = append(out, applied)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ContainerName < out[j].ContainerName })
	return out
}

// unknownContainers says which resources entries name no container of the workload ("" when all do): such an
// entry sizes nothing, which the sizer must say rather than report its resources applied.
func unknownContainers(policies []sizerv1alpha1.ContainerResources, containers []corev1.Container) string {
	var names, unknown []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	for i, p := range policies {
		if p.ContainerName != AllContainers && !slices.Contains(names, p.ContainerName) {
			unknown = append(unknown, fmt.Sprintf("spec.resources[%d].containerName: %q", i, p.ContainerName))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	return fmt.Sprintf("%s names no container of the workload (its containers: %s); those entries size nothing",
		strings.Join(unknown, ", "), strings.Join(names, ", "))
}

// effectiveLimits are the limits a container will run with: those the sizer writes over its current ones, key by
// key (server-side apply keeps a limit of another resource that someone else set; a created target's template
// merges the same way, mergeResources).
func effectiveLimits(c corev1.Container, applied []sizerv1alpha1.AppliedResources) corev1.ResourceList {
	for _, a := range applied {
		if a.ContainerName == c.Name {
			return mergeResources(c.Resources.Limits, a.Limits)
		}
	}
	return c.Resources.Limits
}

// resourcesEqual reports whether a container already has exactly the applied requests (and limits, when the
// sizer writes them).
func resourcesEqual(c corev1.Container, a sizerv1alpha1.AppliedResources) bool {
	return listEqual(c.Resources.Requests, a.Requests) && (a.Limits == nil || listEqual(c.Resources.Limits, a.Limits))
}

// listEqual reports whether have holds every quantity of want (other resources in have are someone else's).
func listEqual(have, want corev1.ResourceList) bool {
	for name := range want {
		h, ok1 := have[name]
		w, ok2 := want[name]
		if ok1 != ok2 || (ok1 && h.Cmp(w) != 0) {
			return false
		}
	}
	return true
}

// quantityOrZero returns list[name] or zero.
func quantityOrZero(list corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if q, ok := list[name]; ok {
		return q
	}
	return resource.Quantity{}
}

func quantitiesEqual(a, b corev1.ResourceList) bool {
	return listEqual(a, b) && listEqual(b, a)
}
