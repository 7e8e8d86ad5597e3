//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// kubectl delete ipl --cascade=orphan keeps the step Deployments and Services (the controller deletes none of them
// on its way out), and the pipeline applied again adopts them: no NameTaken, no new Deployment.
func TestAnOrphanDeleteKeepsTheStepsAndTheNextPipelineAdoptsThem(t *testing.T) {
	for name, storage := range map[string]inferencev1alpha1.ModelStorage{
		"the user's claim": {Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
		// The claim the pipeline made is bound to a volume named with the first pipeline's UID: the next one keeps it.
		"an NFS share": {Type: inferencev1alpha1.StorageNFS,
			CSIParameter: map[string]string{"server": "nfs.example.internal", "share": "/exports/models"}},
	} {
		t.Run(name, func(t *testing.T) { orphanDeleteAndApplyAgain(t, storage) })
	}
}

func orphanDeleteAndApplyAgain(t *testing.T, storage inferencev1alpha1.ModelStorage) {
	s := newScenario(t)
	startController(t)
	newPipeline := func() *inferencev1alpha1.Pipeline {
		p := &inferencev1alpha1.Pipeline{}
		p.Name, p.Namespace = "kept", s.ns
		p.Spec.ModelStorage = *storage.DeepCopy()
		p.Spec.Steps = []inferencev1alpha1.Step{{Name: "a", Image: "a:v1", Next: []string{"b"}}, {Name: "b", Image: "b:v1"}}
		return p
	}
	s.g.Expect(env.Client.Create(s.ctx, newPipeline())).To(Succeed())
	s.g.Eventually(func() []string { return s.get("kept").Finalizers }, timeout, poll).Should(ContainElement(inferencev1alpha1.Finalizer))
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment("kept-b") }, timeout, poll).ShouldNot(BeNil())
	uids := map[string]types.UID{"a": s.deployment("kept-a").UID, "b": s.deployment("kept-b").UID}

	s.g.Expect(env.Client.Delete(s.ctx, s.get("kept"), client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	// The controller lets go (its finalizer leaves); the garbage collector's orphan finalizer stays, as no collector
	// runs here.
	s.g.Eventually(func() []string { return s.get("kept").Finalizers }, timeout, poll).Should(Equal([]string{metav1.FinalizerOrphanDependents}))
	for step, uid := range uids {
		d := s.deployment("kept-" + step)
		s.g.Expect(d).NotTo(BeNil(), "step %s's Deployment was deleted by an orphan delete", step)
		s.g.Expect(d.UID).To(Equal(uid))
		s.g.Expect(d.DeletionTimestamp).To(BeNil(), "step %s's Deployment is being deleted by an orphan delete", step)
	}

	// The garbage collector's part: the references off the dependents, then its finalizer off the pipeline.
	var dependents []client.Object
	for _, name := range []string{"kept-a", "kept-b"} {
		dependents = append(dependents, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}})
	}
	nfs := storage.Type == inferencev1alpha1.StorageNFS
	if nfs {
		dependents = append(dependents, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pipeline.ClaimName(s.get("kept")), Namespace: s.ns}})
	}
	volume := pipeline.PVName(s.get("kept"))
	s.collectOrphans("kept", dependents...)
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "kept"}, &inferencev1alpha1.Pipeline{}))
	}, timeout, poll).Should(BeTrue())

	s.g.Expect(env.Client.Create(s.ctx, newPipeline())).To(Succeed())
	again := s.get("kept").UID
	for step, uid := range uids {
		s.g.Eventually(func() types.UID {
			if ref := metav1.GetControllerOf(s.deployment("kept-" + step)); ref != nil {
				return ref.UID
			}
			return ""
		}, timeout, poll).Should(Equal(again), "step %s's Deployment was not adopted", step)
		s.g.Expect(s.deployment("kept-"+step).UID).To(Equal(uid), "step %s's Deployment was made anew", step)
		s.g.Expect(s.stepStatus("kept", step).Reason).NotTo(Equal(inferencev1alpha1.ReasonNameTaken))
	}
	if nfs {
		// The claim is adopted, still bound to the first volume, and no second volume is made.
		s.g.Eventually(func() int64 { return s.get("kept").Status.ObservedGeneration }, timeout, poll).Should(Equal(s.get("kept").Generation))
		for _, step := range []string{"a", "b"} {
			s.g.Expect(s.stepStatus("kept", step).Reason).NotTo(Equal(inferencev1alpha1.ReasonApplyFailed))
		}
		var pvs corev1.PersistentVolumeList
		s.g.Consistently(func() []string {
			s.g.Expect(env.Client.List(s.ctx, &pvs, client.MatchingLabels{inferencev1alpha1.PipelineLabel: "kept",
				pipeline.NamespaceLabel: s.ns})).To(Succeed())
			var names []string
			for _, pv := range pvs.Items {
				names = append(names, pv.Name)
			}
			return names
		}, 2*time.Second, poll).Should(Equal([]string{volume}))
		var claim corev1.PersistentVolumeClaim
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: pipeline.ClaimName(s.get("kept"))}, &claim)).To(Succeed())
		s.g.Expect(metav1.GetControllerOf(&claim)).NotTo(BeNil())
		s.g.Expect(metav1.GetControllerOf(&claim).UID).To(Equal(again))
	}
}

// The garbage collector may finish an orphan delete (references off, its finalizer gone) before the controller's
// pass sees it, say while the controller is down: the pass then finds nothing of the pipeline's and must still not
// delete the models volume its orphaned claim is bound to (the deletion would wait on that claim for good).
func TestAnOrphanDeleteSeenLateKeepsTheVolume(t *testing.T) {
	s := newScenario(t)
	first, _ := env.StartCountedManager(t, pipeline.CacheOptions(), func(o client.Object) bool {
		_, ok := o.(*inferencev1alpha1.Pipeline)
		return ok
	}, func(mgr ctrl.Manager, c client.Client) error {
		return (&pipeline.Reconciler{Client: c, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
	})
	p := &inferencev1alpha1.Pipeline{}
	p.Name, p.Namespace = "late", s.ns
	p.Spec.ModelStorage = inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
		CSIParameter: map[string]string{"server": "nfs.example.internal", "share": "/exports/models"}}
	p.Spec.Steps = []inferencev1alpha1.Step{{Name: "a", Image: "a:v1"}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	var claim corev1.PersistentVolumeClaim
	claimKey := client.ObjectKey{Namespace: s.ns, Name: pipeline.ClaimName(s.get("late"))}
	s.g.Eventually(func() error { return env.Client.Get(s.ctx, claimKey, &claim) }, timeout, poll).Should(Succeed())
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "late-a"}, &corev1.Service{})
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment("late-a") }, timeout, poll).ShouldNot(BeNil())
	volume := pipeline.PVName(s.get("late"))
	first.Stop()

	s.g.Expect(env.Client.Delete(s.ctx, s.get("late"), client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
	s.collectOrphans("late", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "late-a", Namespace: s.ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "late-a", Namespace: s.ns}}, &claim)

	startController(t)
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "late"}, &inferencev1alpha1.Pipeline{}))
	}, timeout, poll).Should(BeTrue(), "the pipeline's deletion hangs")
	var pv corev1.PersistentVolume
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Name: volume}, &pv)).To(Succeed())
	s.g.Expect(pv.DeletionTimestamp).To(BeNil(), "the volume of the orphaned claim is being deleted")
	s.g.Expect(s.deployment("late-a")).NotTo(BeNil())
}

// collectOrphans plays the garbage collector's part in an orphan delete of pipeline name: the owner references off
// each dependent, then its orphan finalizer off the pipeline.
func (s *scenario) collectOrphans(name string, dependents ...client.Object) {
	for _, obj := range dependents {
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		base := obj.DeepCopyObject().(client.Object)
		obj.SetOwnerReferences(nil)
		s.g.Expect(env.Client.Patch(s.ctx, obj, client.MergeFrom(base))).To(Succeed())
	}
	p := s.get(name)
	base := p.DeepCopy()
	controllerutil.RemoveFinalizer(p, metav1.FinalizerOrphanDependents)
	s.g.Expect(env.Client.Patch(s.ctx, p, client.MergeFrom(base))).To(Succeed())
}
