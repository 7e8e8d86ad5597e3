//go:build integration

package daemonset_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/daemonset"
)

// A rollout's status writes never conflict with one another: each is written without a resourceVersion the cache
// may not have caught up with.
func TestStatusWritesNeverConflict(t *testing.T) {
	s := newScenario(t)
	var writes, conflicts atomic.Int64
	env.StartCountedManager(t, daemonset.CacheOptions(), isDaemonSet, func(mgr ctrl.Manager, c client.Client) error {
		count := func(err error) error {
			writes.Add(1)
			if apierrors.IsConflict(err) {
				conflicts.Add(1)
			}
			return err
		}
		watched := interceptor.NewClient(noWatch{c}, interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				return count(c.SubResource(sub).Update(ctx, obj, opts...))
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				return count(c.SubResource(sub).Patch(ctx, obj, p, opts...))
			},
		})
		return (&daemonset.Reconciler{Client: watched}).SetupWithManager(mgr)
	})
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		s.node(n, nil)
	}
	s.daemonSet("quiet", "agent:v1", func(ds *daemonsetv1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{}
	})
	s.kubelet("quiet")
	s.g.Eventually(s.reasonOf("quiet", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	s.update("quiet", func(ds *daemonsetv1alpha1.DaemonSet) { ds.Spec.Image = "agent:v2" })
	s.g.Eventually(func() int32 { return s.get("quiet").Status.UpdatedNumberScheduled }, timeout, poll).Should(Equal(int32(6)))
	s.g.Eventually(s.reasonOf("quiet", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
	t.Logf("%d status writes, %d conflicts", writes.Load(), conflicts.Load())
	s.g.Expect(writes.Load()).To(BeNumerically(">", 0))
	s.g.Expect(conflicts.Load()).To(BeZero(), "status writes that conflicted")
}

// noWatch lets the controller's client stand where interceptor wants a client.WithWatch; the controller never
// watches through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through this client")
}

// A status someone else wipes in place (a backup tool's restore of the status, kubectl edit --subresource=status)
// changes no generation. The controller still writes it again, from what it finds, though nothing else changed:
// no pod, node or revision event would bring it back.
func TestAStatusWipedInPlaceIsWrittenAgain(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.allUpdated("wiped", "a", "b")

	s.g.Eventually(func() error { // the controller writes the status too: try again on a conflict
		ds := s.get("wiped")
		ds.Status = daemonsetv1alpha1.DaemonSetStatus{}
		return env.Client.Status().Update(s.ctx, ds)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() int32 { return s.get("wiped").Status.NumberReady }, timeout, poll).Should(Equal(int32(2)),
		"the wiped status was not written again")
	s.g.Expect(s.get("wiped").Status.ObservedGeneration).To(Equal(s.get("wiped").Generation))
	s.g.Eventually(s.reasonOf("wiped", daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
}
