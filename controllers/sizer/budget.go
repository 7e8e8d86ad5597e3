package sizer

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// An in-place resize restarts a container when a resource it changes has resizePolicy RestartContainer. Such a
// resize takes the pod out of its Services for the restart, so the sizer does it a few pods at a time, within the
// workload's disruption budget, as the vertical pod autoscaler does; a resize that restarts nothing is done on every
// pod at once.

// restartBudget is how many more healthy pods may be restarted at once, and where that number comes from.
type restartBudget struct {
	// allowed is how many more healthy pods may go down now (0: wait for one to come back).
	allowed int
	// none, when set, says why the workload allows no pod down at all: a restarting resize then goes through the
	// template, where the workload surges.
	none string
}

// restartsOnResize says which container of pod a resize to applied restarts, and for which resource ("" when none).
func restartsOnResize(pod *corev1.Pod, applied []sizerv1alpha1.AppliedResources) string {
	for _, c := range pod.Spec.Containers {
		for _, a := range applied {
			if a.ContainerName != c.Name {
				continue
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if !changesResource(c, a, res) {
					continue
				}
				for _, p := range c.ResizePolicy {
					if p.ResourceName == res && p.RestartPolicy == corev1.RestartContainer {
						return fmt.Sprintf("container %s restarts on a %s resize (resizePolicy RestartContainer)", c.Name, res)
					}
				}
			}
		}
	}
	return ""
}

// changesResource reports whether applying a to c changes c's request or limit of res.
func changesResource(c corev1.Container, a sizerv1alpha1.AppliedResources, res corev1.ResourceName) bool {
	differs := func(want, have corev1.ResourceList) bool {
		w, ok := want[res]
		if !ok {
			return false
		}
		h, ok := have[res]
		return !ok || w.Cmp(h) != 0
	}
	return differs(a.Requests, c.Resources.Requests) || differs(a.Limits, c.Resources.Limits)
}

// podHealthy reports whether a pod serves: Ready, with no resize under way or pending (a pod the sizer asked to
// resize counts as down from that moment, before the kubelet shows it: the sizer's next look must not spend the
// same budget twice).
func podHealthy(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || resizeUnderWay(pod) {
		return false
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		case corev1.PodResizePending, corev1.PodResizeInProgress:
			if c.Status == corev1.ConditionTrue {
				return false
			}
		}
	}
	return ready
}

// budgetFor is the restart budget of a workload's pods: each PodDisruptionBudget that selects them allows its
// currentHealthy - desiredHealthy, counted from the pods as they are now (a budget's own status lags a restart the
// sizer just asked for); without one, the workload's own maxUnavailable less the pods down now. The smallest wins.
func budgetFor(workload client.Object, replicas int32, pdbs []policyv1.PodDisruptionBudget, pods []corev1.Pod) restartBudget {
	healthy, down := 0, 0
	for i := range pods {
		if podHealthy(&pods[i]) {
			healthy++
		} else {
			down++
		}
	}
	var governing []string
	allowed := -1
	for _, pdb := range pdbs {
		sel, err := metaSelector(pdb)
		if err != nil || !selectsAny(sel, pods) {
			continue
		}
		governing = append(governing, pdb.Name)
		if a := healthy - desiredHealthy(pdb, replicas); allowed < 0 || a < allowed {
			allowed = a
		}
	}
	if len(governing) > 0 {
		return restartBudget{allowed: max(allowed, 0)}
	}
	most, source := maxUnavailable(workload, replicas)
	if most <= 0 {
		return restartBudget{none: source + " allows no pod down, and no PodDisruptionBudget allows one"}
	}
	return restartBudget{allowed: max(most-down, 0)}
}

// desiredHealthy is how many pods a budget wants healthy: its status's count once the disruption controller has
// seen its spec (it counts every pod the budget selects), else its spec's against the workload's replicas (a budget
// just made, or just changed, has no count of its own yet).
func desiredHealthy(pdb policyv1.PodDisruptionBudget, replicas int32) int {
	if pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods > 0 {
		return int(pdb.Status.DesiredHealthy)
	}
	switch spec := pdb.Spec; {
	case spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(replicas), true)
		if err != nil {
			return int(replicas)
		}
		return n
	case spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(replicas), true)
		if err != nil {
			return int(replicas)
		}
		return int(replicas) - n
	}
	return 1 // policy/v1: a budget that says neither wants one pod available
}

// maxUnavailable is how many of a workload's pods its own update strategy lets be down at once, and a phrase that
// says so.
func maxUnavailable(workload client.Object, replicas int32) (int, string) {
	switch w := workload.(type) {
	case *appsv1.Deployment:
		if w.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			return int(replicas), fmt.Sprintf("Deployment %s (strategy Recreate)", w.Name)
		}
		mu := intstr.FromString("25%")
		if ru := w.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&mu, int(replicas), false)
		if err != nil {
			n = 0
		}
		return n, fmt.Sprintf("Deployment %s (maxUnavailable %s of %d replicas)", w.Name, mu.String(), replicas)
	case *appsv1.StatefulSet:
		mu := intstr.FromInt32(1)
		if ru := w.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&mu, int(replicas), false)
		if err != nil || n < 1 {
			n = 1 // a StatefulSet's rolling update always takes at least one pod down
		}
		return n, fmt.Sprintf("StatefulSet %s (maxUnavailable %s)", w.Name, mu.String())
	}
	return 1, "the workload"
}

// metaSelector is a budget's selector; a budget without one selects nothing (policy/v1).
func metaSelector(pdb policyv1.PodDisruptionBudget) (labels.Selector, error) {
	if pdb.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
}

// selectsAny reports whether sel selects one of pods.
func selectsAny(sel labels.Selector, pods []corev1.Pod) bool {
	for i := range pods {
		if sel.Matches(labels.Set(pods[i].Labels)) {
			return true
		}
	}
	return false
}
