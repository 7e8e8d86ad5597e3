package daemonset_test

import (
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/daemonset"
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
	startController(t)
	for _, n := range []string{"a", "b"} {
		s.node(n, nil)
	}
	s.daemonSet("measured", "agent:v1")
	s.kubelet("measured")
	s.g.Eventually(s.reasonOf("measured", daemonset.ConditionReady), timeout, poll).Should(Equal(daemonset.ReasonAllNodesUpdated))
	// The first rollout (the DaemonSet's creation) was measured by the write that completed it.
	s.g.Eventually(func() uint64 { return rolloutsMeasured(s.g) }, timeout, poll).Should(BeNumerically(">=", 1))
	before := rolloutsMeasured(s.g)

	s.update("measured", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() bool {
		ds := s.get("measured")
		return ds.Status.UpdatedNumberScheduled == 2 && ds.Status.ObservedGeneration == ds.Generation &&
			condition(ds, daemonset.ConditionReady).Reason == daemonset.ReasonAllNodesUpdated
	}, timeout, poll).Should(BeTrue())
	s.g.Eventually(func() uint64 { return rolloutsMeasured(s.g) - before }, timeout, poll).Should(Equal(uint64(1)))
	s.g.Consistently(func() uint64 { return rolloutsMeasured(s.g) - before }, "500ms", poll).Should(Equal(uint64(1)),
		"one rollout measured more than once")
	s.g.Eventually(func() []string {
		var events eventsv1.EventList
		_ = env.Client.List(s.ctx, &events, client.InNamespace(s.ns))
		var reasons []string
		for _, e := range events.Items {
			if e.Regarding.Name == "measured" {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, timeout, poll).Should(ContainElement("RolloutComplete"))
}
