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
// pod at once. Evicting a pod whose resize cannot fit its node spends the same budget.

// restartBudget is how many more serving pods may be taken down now: per PodDisruptionBudget that selects the
// workload's pods, or, without one, per the workload's own maxUnavailable.
type restartBudget struct {
	// pdbs are the budgets that select the workload's pods, each with what it still allows.
	pdbs []pdbAllowance
	// workload is what the workload's maxUnavailable still allows: for every pod when no budget selects its pods,
	// else for the pods no budget selects.
	workload int
	// none, when set, says why no pod may ever be taken down (a budget that allows no disruption, or a workload
	// with maxUnavailable 0 and no budget): a restarting resize then goes through the template instead.
	none string
}

// pdbAllowance is one PodDisruptionBudget and the disruptions it still allows.
type pdbAllowance struct {
	selector labels.Selector
	allowed  int
}

// take spends the budget on taking pod down, and reports whether it could: every budget that selects the pod must
// allow one more disruption.
func (b *restartBudget) take(pod *corev1.Pod) bool {
	if b.none != "" {
		return false
	}
	var mine []*pdbAllowance
	for i := range b.pdbs {
		if b.pdbs[i].selector.Matches(labels.Set(pod.Labels)) {
			if b.pdbs[i].allowed <= 0 {
				return false
			}
			mine = append(mine, &b.pdbs[i])
		}
	}
	if len(mine) == 0 {
		// No budget selects this pod: the workload's own maxUnavailable does.
		if b.workload <= 0 {
			return false
		}
		b.workload--
		return true
	}
	for _, a := range mine {
		a.allowed--
	}
	return true
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

// serving reports whether a pod serves now: Ready and not terminating. Taking a serving pod down spends the budget;
// restarting one that does not serve costs nothing.
func serving(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// healthy reports whether a pod serves and will go on serving: no resize the kubelet may apply at any moment (one
// asked for and not applied yet, unless the kubelet found it infeasible, or one in progress), which may restart it.
// A budget counts only healthy pods, so that the sizer's next look, before the kubelet shows a restart, does not
// spend the budget twice.
func healthy(pod *corev1.Pod) bool {
	if !serving(pod) {
		return false
	}
	infeasible := false
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodResizeInProgress && c.Status == corev1.ConditionTrue:
			return false
		case c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible:
			infeasible = true
		}
	}
	return infeasible || !resizeUnderWay(pod)
}

// budgetFor is the restart budget of a workload's pods. Each PodDisruptionBudget that selects one of them allows
// its healthy pods less the pods it wants healthy, counted among every pod it selects as they are now (selected
// lists them; a budget's own status lags a restart the sizer just asked for). Without one, the workload's own
// maxUnavailable allows that many pods down, less those down now (missing, terminating, not ready or resizing).
func budgetFor(workload client.Object, replicas int32, pdbs []policyv1.PodDisruptionBudget, pods []corev1.Pod,
	selected func(labels.Selector) []corev1.Pod) restartBudget {
	var b restartBudget
	for _, pdb := range pdbs {
		sel, err := budgetSelector(pdb)
		if err != nil || !selectsAny(sel, pods) {
			continue
		}
		theirs := selected(sel)
		up := 0
		for i := range theirs {
			if healthy(&theirs[i]) {
				up++
			}
		}
		expected := len(theirs)
		current := pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods > 0
		if current {
			expected = max(expected, int(pdb.Status.ExpectedPods))
		}
		want := desiredHealthy(pdb, expected, current)
		if want >= expected {
			b.none = fmt.Sprintf("PodDisruptionBudget %s allows no pod of its %d down", pdb.Name, expected)
			return b
		}
		b.pdbs = append(b.pdbs, pdbAllowance{selector: sel, allowed: up - want})
	}
	most, source := workloadMaxUnavailable(workload, replicas)
	if most <= 0 && len(b.pdbs) == 0 {
		b.none = source + " allows no pod down, and no PodDisruptionBudget allows one"
		return b
	}
	up := 0
	for i := range pods {
		if healthy(&pods[i]) {
			up++
		}
	}
	b.workload = most - max(int(replicas)-up, 0)
	return b
}

// desiredHealthy is how many of its expected pods a budget wants healthy: its status's count once the disruption
// controller has seen its spec (current), else its spec's.
func desiredHealthy(pdb policyv1.PodDisruptionBudget, expected int, current bool) int {
	if current {
		return int(pdb.Status.DesiredHealthy)
	}
	switch spec := pdb.Spec; {
	case spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, expected, true)
		if err != nil {
			return expected
		}
		return n
	case spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, expected, true)
		if err != nil {
			return expected
		}
		return expected - n
	}
	return expected // a budget that says neither: take nothing down
}

// workloadMaxUnavailable is how many of a workload's pods its own update strategy lets be down at once, and a
// phrase that says so. A Deployment that recreates its pods lets all of them be down.
func workloadMaxUnavailable(workload client.Object, replicas int32) (int, string) {
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

// budgetSelector is a budget's selector; a budget without one selects nothing (policy/v1).
func budgetSelector(pdb policyv1.PodDisruptionBudget) (labels.Selector, error) {
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

// resizeUnderWay reports whether the kubelet still runs a container with other resources than its spec asks (it
// reports what it allocated in status.containerStatuses[].resources), before any resize condition shows.
func resizeUnderWay(pod *corev1.Pod) bool {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Resources == nil {
			continue
		}
		for _, c := range pod.Spec.Containers {
			if c.Name == st.Name && (!quantitiesEqual(c.Resources.Requests, st.Resources.Requests) ||
				!quantitiesEqual(c.Resources.Limits, st.Resources.Limits)) {
				return true
			}
		}
	}
	return false
}
