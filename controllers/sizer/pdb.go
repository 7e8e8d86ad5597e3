package sizer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// pdbDecision is what budget the sizer should keep for the target.
type pdbDecision struct {
	// create: a PodDisruptionBudget should exist (with exactly one of minAvailable, maxUnavailable).
	create                       bool
	minAvailable, maxUnavailable *intstr.IntOrString
	// safe: the budget (or its absence) lets a node drain go on.
	safe            bool
	reason, message string
}

// profileBudget is the budget of each profile (docs/workloadsizer.md tabulates them).
func profileBudget(p sizerv1alpha1.DisruptionProfile) (minAvailable, maxUnavailable *intstr.IntOrString) {
	switch p {
	case sizerv1alpha1.ProfileStateless, "":
		return ptr.To(intstr.FromString("60%")), nil
	case sizerv1alpha1.ProfileSingleInstance:
		return nil, ptr.To(intstr.FromInt32(0))
	case sizerv1alpha1.ProfileQuorum:
		return nil, ptr.To(intstr.FromInt32(1))
	}
	return nil, nil
}

// decidePDB derives the budget for replicas pods. A budget that would allow no eviction at all (so every node
// drain would wait forever) is not created unless the user allowed it, and the decision says why.
func decidePDB(d *sizerv1alpha1.DisruptionSpec, replicas int32) pdbDecision {
	if d == nil || (d.Profile == sizerv1alpha1.ProfileNone && d.MinAvailable == nil && d.MaxUnavailable == nil) {
		return pdbDecision{safe: true, reason: sizerv1alpha1.ReasonBudgetNotRequested, message: "no disruption budget requested"}
	}
	minA, maxU := profileBudget(d.Profile)
	if d.MinAvailable != nil || d.MaxUnavailable != nil {
		minA, maxU = d.MinAvailable, d.MaxUnavailable
	}
	if replicas == 0 {
		return pdbDecision{safe: true, reason: sizerv1alpha1.ReasonBudgetNoReplicas, message: "no replicas: no budget needed"}
	}
	// The disruption controller rounds percentages up, for both fields.
	var allowed int
	var shape string
	if minA != nil {
		n, _ := intstr.GetScaledValueFromIntOrPercent(minA, int(replicas), true)
		allowed, shape = int(replicas)-n, fmt.Sprintf("minAvailable %s (%d of %d)", minA.String(), n, replicas)
	} else {
		n, _ := intstr.GetScaledValueFromIntOrPercent(maxU, int(replicas), true)
		allowed, shape = n, fmt.Sprintf("maxUnavailable %s", maxU.String())
	}
	dec := pdbDecision{create: true, minAvailable: minA, maxUnavailable: maxU, safe: true, reason: sizerv1alpha1.ReasonBudgetAllows,
		message: fmt.Sprintf("%s lets %d of %d pods be evicted at a time", shape, allowed, replicas)}
	if allowed > 0 {
		return dec
	}
	dec.safe = false
	if d.AllowBlockingDrains {
		dec.reason = sizerv1alpha1.ReasonBudgetBlockingByAsk
		dec.message = fmt.Sprintf("%s allows no eviction with %d replicas: node drains wait until someone intervenes "+
			"(allowBlockingDrains is true)", shape, replicas)
		return dec
	}
	dec.create = false
	dec.reason = sizerv1alpha1.ReasonBudgetWouldBlock
	dec.message = fmt.Sprintf("not created: %s would allow no eviction with %d replicas, so every node drain would "+
		"wait forever; raise spec.size, pick another profile or budget, or set spec.disruption.allowBlockingDrains", shape, replicas)
	return dec
}
