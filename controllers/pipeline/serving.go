package pipeline

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rolledOut reports whether a step's Deployment runs want replicas of its current spec, all available: every
// replica is of the current template, and want of them pass their readiness probe (the model is loaded).
func rolledOut(d *appsv1.Deployment, want int32) bool {
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas >= want && st.Replicas <= st.UpdatedReplicas &&
		st.AvailableReplicas >= want
}

// serving reports whether a step's Deployment serves: at least servingFloor replicas are available, whatever their
// template. Ready means serving, so a rollout that keeps enough replicas up (maxSurge 0 on GPUs keeps want-1) and
// an autoscaler's scale-out do not take a step out of Ready. The Deployment's own Available condition is not used:
// it measures against spec.replicas, so it turns False while an autoscaler adds replicas the step never needed.
func serving(d *appsv1.Deployment, want int32, autoscaled bool) bool {
	return d.Status.AvailableReplicas >= servingFloor(d, want, autoscaled)
}

// servingFloor is how many available replicas a step needs to count as serving: at least one; want less what its
// rollout strategy may take down (as the Deployment controller counts it); for a step an autoscaler scales, one, as
// the replicas above it are capacity the autoscaler chases, not what the step needs to answer.
func servingFloor(d *appsv1.Deployment, want int32, autoscaled bool) int32 {
	if autoscaled {
		return 1
	}
	return max(1, want-maxUnavailable(d.Spec.Strategy, want))
}

// maxUnavailable is how many of want replicas a strategy may take down in a rollout, as the Deployment controller
// resolves it: none for Recreate (it takes them all down, and serves nothing meanwhile); for RollingUpdate
// maxUnavailable of want rounded down (25% when unset), and one when both it and maxSurge come to zero.
func maxUnavailable(s appsv1.DeploymentStrategy, want int32) int32 {
	if s.Type == appsv1.RecreateDeploymentStrategyType || want == 0 {
		return 0
	}
	quarter := intstr.FromString("25%")
	unavailable, surge := &quarter, &quarter
	if ru := s.RollingUpdate; ru != nil {
		if ru.MaxUnavailable != nil {
			unavailable = ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			surge = ru.MaxSurge
		}
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(unavailable, int(want), false)
	if err != nil {
		return 0
	}
	sg, err := intstr.GetScaledValueFromIntOrPercent(surge, int(want), true)
	if err != nil {
		return 0
	}
	if u == 0 && sg == 0 {
		u = 1
	}
	return min(int32(u), want)
}

// rollingOut reports whether a step's Deployment is moving to a new template: its controller has not seen the spec
// yet, or replicas of an old template remain, or fewer than want run the current one.
func rollingOut(d *appsv1.Deployment, want int32) bool {
	st := d.Status
	return st.ObservedGeneration < d.Generation || st.Replicas > st.UpdatedReplicas || st.UpdatedReplicas < want
}
