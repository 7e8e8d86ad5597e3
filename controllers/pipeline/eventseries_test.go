//go:build integration

package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/testenv"
)

// noCachedEvents is the manager's cached client as the controller's role sees it: it may get, create and patch
// events, never list or watch them, so a cached read of an event (which would start an informer over every event
// of the cluster) fails. envtest runs as an admin, so without it a cached read would simply work.
type noCachedEvents struct{ client.Client }

func (c noCachedEvents) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*eventsv1.Event); ok {
		return fmt.Errorf("a cached read of event %s: the controller may not list or watch events", key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// The same event again counts up its series on the apiserver, through a client that may not read events from the
// cache. The clock moves a SeriesRefresh at each look, so that every repeat is written back at once.
func TestRepeatedEventCountsUpItsSeries(t *testing.T) {
	s := newScenario(t)
	var mu sync.Mutex
	clock := time.Now()
	env.StartManager(t, testenv.ManagerOptions{Cache: pipeline.CacheOptions(), Setup: func(mgr ctrl.Manager) error {
		w := recorder.New(noCachedEvents{mgr.GetClient()}, mgr.GetAPIReader(), "pipeline-controller")
		w.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(recorder.SeriesRefresh)
			return clock
		}
		return (&pipeline.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: w}).SetupWithManager(mgr)
	}})
	s.oneStep("again", inferencev1alpha1.Step{Name: "a", Image: "x"})
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}}
	s.stepPod("again", "a", unschedulable)
	s.g.Eventually(func() []string { return s.events("again") }, timeout, poll).Should(ContainElement(
		HavePrefix("Warning " + inferencev1alpha1.ReasonUnschedulable)))
	// Another cause, then the first again: the same event as the first, which counts up its series.
	s.setPodStatus("again-a-x", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "x: not found"}}}}})
	s.g.Eventually(func() []string { return s.events("again") }, timeout, poll).Should(ContainElement(
		HavePrefix("Warning " + inferencev1alpha1.ReasonImagePull)))
	s.setPodStatus("again-a-x", unschedulable)
	s.g.Eventually(func() int32 {
		var list eventsv1.EventList
		_ = env.Client.List(s.ctx, &list, client.InNamespace(s.ns))
		for _, e := range list.Items {
			if e.Reason == inferencev1alpha1.ReasonUnschedulable && e.Series != nil {
				return e.Series.Count
			}
		}
		return 0
	}, timeout, poll).Should(Equal(int32(2)), "the repeated event did not count up its series")
}
