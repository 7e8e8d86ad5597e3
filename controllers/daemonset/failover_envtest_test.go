//go:build integration

package daemonset_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/controllers/daemonset"
)

// hookReader reads live through Reader, and runs hook once, right after the first list of pods it answers.
type hookReader struct {
	client.Reader
	once sync.Once
	hook func()
}

// List answers from Reader, then runs the hook after the first pod list.
func (h *hookReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := h.Reader.List(ctx, list, opts...)
	if _, ok := list.(*corev1.PodList); ok && err == nil {
		h.once.Do(h.hook)
	}
	return err
}

// A newly elected leader whose first live read of the pods shows one that is deleted a moment later, and gone from
// its cache by the time it reads that, does not wait for the pod's creation event, which never comes: a node that
// joins next gets its pod within seconds (not after the expectations' five minutes), and so does the node whose pod
// went.
func TestANewLeaderDoesNotAwaitAPodGoneBetweenItsReads(t *testing.T) {
	s := newScenario(t)
	old := startController(t)
	s.node("a", nil)
	s.node("b", nil)
	s.daemonSet(agent, "agent:v1")
	s.kubelet(agent)
	s.g.Eventually(s.rolledOut, timeout, poll).Should(BeTrue())
	old.mgr.Stop()

	b := s.label + "-b"
	var gone corev1.Pod
	for _, p := range s.pods(agent) {
		if nodeOf(&p) == b {
			gone = p
		}
	}
	var leaderCache cache.Cache
	hookErr := make(chan error, 1)
	hook := func() {
		// Between the new leader's live list and its cache read: the pod goes, and the cache sees it go.
		ctx := context.Background()
		err := env.Client.Delete(ctx, gone.DeepCopy(), client.GracePeriodSeconds(0))
		if err == nil {
			err = wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(leaderCache.Get(ctx, client.ObjectKeyFromObject(&gone), &corev1.Pod{})), nil
			})
		}
		hookErr <- err
	}
	env.StartCountedManager(t, daemonset.CacheOptions(), isDaemonSet, func(mgr ctrl.Manager, c client.Client) error {
		leaderCache = mgr.GetCache()
		return (&daemonset.Reconciler{Client: c, APIReader: &hookReader{Reader: mgr.GetAPIReader(), hook: hook}}).SetupWithManager(mgr)
	})
	select {
	case err := <-hookErr:
		s.g.Expect(err).NotTo(HaveOccurred(), "deleting the pod between the new leader's reads")
	case <-time.After(timeout):
		t.Fatal("the new leader read no pods live")
	}
	s.node("c", nil)
	s.g.Eventually(func() map[string]int { return s.podsPerNode(agent) }, timeout, poll).Should(
		Equal(map[string]int{s.label + "-a": 1, b: 1, s.label + "-c": 1}), "the new leader waits for a creation that never comes")
}
