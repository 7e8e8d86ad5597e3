//go:build integration

package pipeline_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// `kubectl scale` and `kubectl edit` on a step's Deployment and Service are undone; then the controller is quiet.
func TestDriftIsCorrected(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node(s.ns+"-a", 0, false)
	s.node(s.ns+"-b", 0, false)
	p := s.faceDetection(s.ns+"-a", s.ns+"-b")
	s.bind(p)
	s.rollOut("face-detection-step-0")
	s.rollOut("face-detection-step-1")
	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))

	// kubectl scale: the scale subresource, as another field manager.
	d := s.deployment("face-detection-step-0")
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: s.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	s.g.Expect(env.Client.SubResource("scale").Update(s.ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("kubectl"))).To(Succeed())
	s.g.Eventually(func() int32 { return *s.deployment("face-detection-step-0").Spec.Replicas }, timeout, poll).Should(Equal(int32(1)))

	// kubectl edit: the Service's port.
	s.g.Eventually(func() error {
		var svc corev1.Service
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection-step-1"}, &svc); err != nil {
			return err
		}
		svc.Spec.Ports[0].Port = 1234
		return env.Client.Update(s.ctx, &svc, client.FieldOwner("kubectl-edit"))
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() []int32 {
		var svc corev1.Service
		_ = env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection-step-1"}, &svc)
		var ports []int32
		for _, p := range svc.Spec.Ports {
			ports = append(ports, p.Port)
		}
		return ports
	}, timeout, poll).Should(Equal([]int32{9081}))
	s.g.Expect(s.stepStatus("face-detection", "step-1").Reason).NotTo(Equal(inferencev1alpha1.ReasonApplyFailed))

	// Corrected once, then no loop.
	quiet(s, c)
	writes := c.Writes.Load()
	s.g.Consistently(c.Writes.Load, 2*time.Second, poll).Should(Equal(writes), "writes after the drift was corrected")
}

// A pipeline deleted before the cache has seen its volume still deletes the volume before it lets the pipeline go:
// "is it gone" is asked of the API. The reconciler here reads through a cache that has seen nothing.
func TestDeletionDoesNotTrustALaggingCache(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: s.ns, Finalizers: []string{inferencev1alpha1.Finalizer}},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs", "share": "/m"}},
			Steps: []inferencev1alpha1.Step{{Name: "a", Image: "x"}},
		}}
	s.g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	pv := pipeline.DesiredPV(p)
	pv.Labels[pipeline.NamespaceLabel] = s.ns
	s.g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	s.g.Expect(env.Client.Delete(ctx, p)).To(Succeed())

	live, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	empty := interceptor.NewClient(live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*inferencev1alpha1.Pipeline); ok {
				return c.Get(ctx, key, obj, opts...)
			}
			return apierrors.NewNotFound(schema.GroupResource{}, key.Name) // the cache has not seen it yet
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return nil },
	})
	r := &pipeline.Reconciler{Client: empty, APIReader: live}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: s.ns, Name: "early"}}
	deadline := time.Now().Add(timeout)
	for {
		_, err := r.Reconcile(ctx, req)
		s.g.Expect(err).NotTo(HaveOccurred())
		if apierrors.IsNotFound(env.Client.Get(ctx, req.NamespacedName, &inferencev1alpha1.Pipeline{})) {
			break
		}
		s.g.Expect(time.Now().Before(deadline)).To(BeTrue(), "the pipeline is never let go")
		// Play the PV protection controller: a volume being deleted loses its finalizer.
		var got corev1.PersistentVolume
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), &got); err == nil && got.DeletionTimestamp != nil {
			release(s, &got)
		}
	}
	err = env.Client.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
	s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the volume leaked: %v", err)
}

// A step's location names a node by its kubernetes.io/hostname label, as the pinning does; not by the node's name.
func TestPinnedNodeIsFoundByItsHostnameLabel(t *testing.T) {
	s := newScenario(t)
	startController(t)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-machine-7", Labels: map[string]string{"kubernetes.io/hostname": s.ns + "-gpu-a"}}}
	s.g.Expect(env.Client.Create(s.ctx, n)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps: []inferencev1alpha1.Step{
				{Name: "by-label", Image: "x", Location: s.ns + "-gpu-a"},
				{Name: "by-name", Image: "x", Location: s.ns + "-machine-7"},
			}}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("pinned", "by-name").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNodeNotFound),
		"no node has that hostname label, so the scheduler would place the pod nowhere")
	s.g.Eventually(func() string { return s.stepStatus("pinned", "by-label").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonStarting))
	var d appsv1.Deployment
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "pinned-by-label"}, &d)).To(Succeed())
	s.g.Expect(d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].
		MatchExpressions[0].Values).To(Equal([]string{s.ns + "-gpu-a"}))

	// The node is cordoned: the step pinned to it by label hears of it.
	n.Spec.Unschedulable = true
	s.g.Expect(env.Client.Update(s.ctx, n)).To(Succeed())
	s.g.Eventually(func() string { return s.stepStatus("pinned", "by-label").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonNodeCordoned))
}
