//go:build integration

package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// rolloutsMeasured is the number of rollouts keelson_daemonset_rollout_duration_seconds has observed so far.
func rolloutsMeasured(g Gomega) uint64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "keelson_daemonset_rollout_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	g.Expect("keelson_daemonset_rollout_duration_seconds").To(BeEmpty(), "the histogram is not registered")
	return 0
}

// A completed rollout is measured once and told in a RolloutComplete event on the DaemonSet.
func TestCompletedRolloutIsMeasuredAndTold(t *testing.T) {
	s := newScenario(t)
	// The histogram is the process's: a DaemonSet an earlier test left behind would add its rollouts to it.
	var others daemonsetv1alpha1.DaemonSetList
	s.g.Expect(env.Client.List(s.ctx, &others)).To(Succeed())
	s.g.Expect(others.Items).To(BeEmpty(), "DaemonSets earlier tests left behind")
	startController(t)
	s.allUpdated("measured", "a", "b")
	// The first rollout (the DaemonSet's creation) was measured by the write that completed it.
	s.g.Eventually(func() uint64 { return rolloutsMeasured(s.g) }, timeout, poll).Should(BeNumerically(">=", 1))
	before := rolloutsMeasured(s.g)

	s.update("measured", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() bool {
		ds := s.get("measured")
		return ds.Status.UpdatedNumberScheduled == 2 && ds.Status.ObservedGeneration == ds.Generation &&
			condition(ds, daemonsetv1alpha1.ConditionReady).Reason == daemonsetv1alpha1.ReasonAllNodesUpdated
	}, timeout, poll).Should(BeTrue())
	s.g.Eventually(func() uint64 { return rolloutsMeasured(s.g) - before }, timeout, poll).Should(Equal(uint64(1)))
	s.g.Consistently(func() uint64 { return rolloutsMeasured(s.g) - before }, "500ms", poll).Should(Equal(uint64(1)),
		"one rollout measured more than once")
	// Told once per rollout: the creation's and the update's, each in its own event.
	s.g.Eventually(func() []string { return s.rolloutEvents("measured") }, timeout, poll).
		Should(HaveExactElements(eventRolloutComplete, eventRolloutComplete))
	s.g.Consistently(func() []string { return s.rolloutEvents("measured") }, "500ms", poll).
		Should(HaveLen(2), "one rollout told more than once")
}

// eventRolloutComplete is the reason of the event that tells a completed rollout.
const eventRolloutComplete = "RolloutComplete"

// rolloutEvents is the reasons of the events about the DaemonSet name that tell a rollout's end.
func (s *scenario) rolloutEvents(name string) []string {
	var events eventsv1.EventList
	s.g.Expect(env.Client.List(s.ctx, &events, client.InNamespace(s.ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == eventRolloutComplete {
			times := int32(1) // a repeat of the same event is counted in its series
			if e.Series != nil {
				times = e.Series.Count
			}
			for range times {
				reasons = append(reasons, e.Reason)
			}
		}
	}
	return reasons
}
