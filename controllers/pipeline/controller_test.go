//go:build integration

package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.RunTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{inferencev1alpha1.AddToScheme}},
		func(e *testenv.Env) { env = e }))
}

const (
	timeout = 20 * time.Second
	poll    = 25 * time.Millisecond
)

func startController(t *testing.T) *testenv.Counts {
	t.Helper()
	_, counts := env.StartCountedManager(t, pipeline.CacheOptions(), func(o client.Object) bool {
		_, ok := o.(*inferencev1alpha1.Pipeline)
		return ok
	}, func(mgr ctrl.Manager, c client.Client) error {
		return (&pipeline.Reconciler{Client: c, APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
	})
	return counts
}

type scenario struct {
	t   *testing.T
	g   Gomega
	ctx context.Context
	ns  string
}

func newScenario(t *testing.T) *scenario {
	return &scenario{t: t, g: NewWithT(t), ctx: context.Background(), ns: env.Namespace(t, "ipl")}
}

// node creates a node (deleted when the test ends) with the given allocatable GPUs.
func (s *scenario) node(name string, gpus int64, cordoned bool) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	s.g.Expect(env.Client.Create(s.ctx, n)).To(Succeed())
	s.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	if gpus > 0 {
		n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		s.g.Expect(env.Client.Status().Update(s.ctx, n)).To(Succeed())
	}
}

// faceDetection is the face-detection sample pipeline, with its nodes named for this test.
func (s *scenario) faceDetection(node1, node2 string) *inferencev1alpha1.Pipeline {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "face-detection", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs.example.internal", "share": "/exports/models"}},
			Steps: []inferencev1alpha1.Step{
				{Name: "step-0", Image: "detector:v1", Location: node1, Model: "face/detect", Args: map[string]string{"listenPort": "9080"}},
				{Name: "step-1", Image: "recognizer:v1", Location: node2, Model: "face/recognize", Args: map[string]string{"listenPort": "9081"}},
			},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	return p
}

func (s *scenario) get(name string) *inferencev1alpha1.Pipeline {
	var p inferencev1alpha1.Pipeline
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &p)).To(Succeed())
	return &p
}

func (s *scenario) phase(name string) func() inferencev1alpha1.Phase {
	return func() inferencev1alpha1.Phase { return s.get(name).Status.Phase }
}

func (s *scenario) stepStatus(name, step string) inferencev1alpha1.StepStatus {
	for _, st := range s.get(name).Status.Steps {
		if st.Name == step {
			return st
		}
	}
	return inferencev1alpha1.StepStatus{}
}

// bind plays the PV controller: volume and claim Bound.
func (s *scenario) bind(p *inferencev1alpha1.Pipeline) {
	s.g.Eventually(func() error {
		var pv corev1.PersistentVolume
		if err := env.Client.Get(s.ctx, client.ObjectKey{Name: pipeline.PVName(s.get(p.Name))}, &pv); err != nil {
			return err
		}
		pv.Status.Phase = corev1.VolumeBound
		if err := env.Client.Status().Update(s.ctx, &pv); err != nil {
			return err
		}
		var pvc corev1.PersistentVolumeClaim
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: pipeline.ClaimName(p)}, &pvc); err != nil {
			return err
		}
		pvc.Status.Phase = corev1.ClaimBound
		return env.Client.Status().Update(s.ctx, &pvc)
	}, timeout, poll).Should(Succeed())
}

// rollOut plays the Deployment controller: the step's Deployment reports all replicas ready.
func (s *scenario) rollOut(name string) {
	s.g.Eventually(func() error {
		var d appsv1.Deployment
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &d); err != nil {
			return err
		}
		r := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, ReadyReplicas: r,
			UpdatedReplicas: r, AvailableReplicas: r}
		return env.Client.Status().Update(s.ctx, &d)
	}, timeout, poll).Should(Succeed())
}

// The face-detection sample pipeline creates exactly its objects, with their labels, and its status
// follows the volume, the claim and the Deployments to Ready.
func TestFaceDetectionPipeline(t *testing.T) {
	s := newScenario(t)
	startController(t)
	n1, n2 := s.ns+"-node-1", s.ns+"-node-2"
	s.node(n1, 0, false)
	s.node(n2, 0, false)
	p := s.faceDetection(n1, n2)

	var deps appsv1.DeploymentList
	s.g.Eventually(func() int {
		_ = env.Client.List(s.ctx, &deps, client.InNamespace(s.ns))
		return len(deps.Items)
	}, timeout, poll).Should(Equal(2))
	for i, d := range deps.Items {
		s.g.Expect(d.Name).To(Equal(fmt.Sprintf("face-detection-step-%d", i)))
		s.g.Expect(d.Labels).To(HaveKeyWithValue("pipeline", "face-detection"))
		s.g.Expect(d.Labels).To(HaveKeyWithValue("step", fmt.Sprintf("step-%d", i)))
	}
	var svcs corev1.ServiceList
	s.g.Eventually(func() int {
		_ = env.Client.List(s.ctx, &svcs, client.InNamespace(s.ns))
		return len(svcs.Items)
	}, timeout, poll).Should(Equal(2))
	var pvcs corev1.PersistentVolumeClaimList
	s.g.Expect(env.Client.List(s.ctx, &pvcs, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(pvcs.Items).To(HaveLen(1))
	var pv corev1.PersistentVolume
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Name: pipeline.PVName(s.get("face-detection"))}, &pv)).To(Succeed())
	s.g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
	s.g.Expect(pv.Spec.ClaimRef.Name).To(Equal(pvcs.Items[0].Name))
	s.g.Expect(pvcs.Items[0].Spec.VolumeName).To(Equal(pv.Name))

	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseProgressing))
	s.g.Expect(s.get("face-detection").Status.Conditions).To(ContainElement(And(
		HaveField("Type", inferencev1alpha1.ConditionStorageReady), HaveField("Status", metav1.ConditionFalse))))

	s.bind(p)
	s.rollOut("face-detection-step-0")
	s.rollOut("face-detection-step-1")
	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))
	st := s.get("face-detection").Status
	s.g.Expect(st.URL).To(Equal(fmt.Sprintf("http://face-detection-step-0.%s.svc:9080", s.ns)))
	s.g.Expect(st.DetailPhase.PVPhase).To(Equal("Bound"))
	s.g.Expect(st.DetailPhase.PVCPhase).To(Equal("Bound"))
	s.g.Expect(st.DetailPhase.StepsPhase).To(Equal([]inferencev1alpha1.StepPhase{
		{Name: "step-0", DeploymentPhase: inferencev1alpha1.PhaseReady}, {Name: "step-1", DeploymentPhase: inferencev1alpha1.PhaseReady}}))
	s.g.Expect(st.Steps[1].Endpoint).To(Equal(fmt.Sprintf("http://face-detection-step-1.%s.svc:9081", s.ns)))
	s.g.Expect(st.Steps[1].Node).To(Equal(n2))
	s.g.Expect(meta.IsStatusConditionTrue(st.Conditions, inferencev1alpha1.ConditionReady)).To(BeTrue())
	s.g.Expect(st.StepsReady).To(Equal("2/2"))
	s.g.Expect(st.ObservedGeneration).To(Equal(s.get("face-detection").Generation))
	s.g.Expect(s.events("face-detection")).To(ContainElement(HavePrefix("Normal PipelineReady")))
}

// A crashing step is reported with the container's own last words; the pipeline is Failed, and says which step.
func TestFailingStepIsExplained(t *testing.T) {
	s := newScenario(t)
	startController(t)
	n1, n2 := s.ns+"-a", s.ns+"-b"
	s.node(n1, 0, false)
	s.node(n2, 0, false)
	p := s.faceDetection(n1, n2)
	s.bind(p)
	s.rollOut("face-detection-step-0")
	s.g.Eventually(func() error {
		var d appsv1.Deployment
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection-step-1"}, &d)
	}, timeout, poll).Should(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "face-detection-step-1-x", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: "face-detection", inferencev1alpha1.StepLabel: "step-1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "recognizer:v1"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "server", Image: "recognizer:v1",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "model dir not found"}}}}
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())

	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseFailed))
	st := s.stepStatus("face-detection", "step-1")
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	s.g.Expect(st.Reason).To(Equal(inferencev1alpha1.ReasonCrashLooping))
	s.g.Expect(st.Message).To(ContainSubstring("model dir not found"))
	s.g.Expect(*st.LastFailure).To(Equal(inferencev1alpha1.Failure{Container: "server", ExitCode: 2, Reason: "Error", Message: "model dir not found"}))
	s.g.Eventually(func() inferencev1alpha1.Phase { return s.stepStatus("face-detection", "step-0").Phase },
		timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady), "the healthy step stays Ready")
}

// Changing one step rewrites only that step's Deployment; the other steps and the storage see no write.
func TestChangingOneStepTouchesOnlyThatStep(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node(s.ns+"-a", 0, false)
	s.node(s.ns+"-b", 0, false)
	s.faceDetection(s.ns+"-a", s.ns+"-b")
	s.g.Eventually(func() int64 { return c.WritesTo("face-detection-step-1") }, timeout, poll).Should(BeNumerically(">=", 2))
	quiet(s, c)
	before := map[string]int64{}
	for _, n := range []string{"face-detection-step-0", "face-detection-step-1", "face-detection-models", pipeline.PVName(s.get("face-detection"))} {
		before[n] = c.WritesTo(n)
	}

	s.g.Eventually(func() error {
		p := s.get("face-detection")
		p.Spec.Steps[1].Image = "recognizer:v2"
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() string {
		var d appsv1.Deployment
		_ = env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection-step-1"}, &d)
		if len(d.Spec.Template.Spec.Containers) == 0 {
			return ""
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}, timeout, poll).Should(Equal("recognizer:v2"))
	quiet(s, c)
	// step-1's Deployment was written once; its Service did not change (same name, so at most that one write).
	s.g.Expect(c.WritesTo("face-detection-step-1") - before["face-detection-step-1"]).To(Equal(int64(1)))
	s.g.Expect(c.WritesTo("face-detection-step-0")).To(Equal(before["face-detection-step-0"]), "step-0 was written")
	s.g.Expect(c.WritesTo("face-detection-models")).To(Equal(before["face-detection-models"]), "the claim was written")
	pvName := pipeline.PVName(s.get("face-detection"))
	s.g.Expect(c.WritesTo(pvName)).To(Equal(before[pvName]), "the volume was written")
}

// quiet waits until the controller has made no write for half a second.
func quiet(s *scenario, c *testenv.Counts) {
	var last int64 = -1
	s.g.Eventually(func() bool {
		w := c.Writes.Load()
		still := w == last
		last = w
		return still
	}, timeout, 500*time.Millisecond).Should(BeTrue())
}

// A step pinned to a missing, cordoned or GPU-less node says so; the pipeline is Degraded; nothing loops.
func TestNodeProblemsAreReported(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node(s.ns+"-cordoned", 0, true)
	s.node(s.ns+"-cpu", 0, false)
	s.node(s.ns+"-gpu", 2, false)
	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps: []inferencev1alpha1.Step{
				{Name: "missing", Image: "x", Location: s.ns + "-ghost"},
				{Name: "cordoned", Image: "x", Location: s.ns + "-cordoned"},
				{Name: "nogpu", Image: "x", Location: s.ns + "-cpu", Resources: gpu},
				{Name: "gpuok", Image: "x", Location: s.ns + "-gpu", Resources: gpu},
			}}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	s.g.Eventually(s.phase("gpu"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseDegraded))
	for step, reason := range map[string]string{"missing": inferencev1alpha1.ReasonNodeNotFound, "cordoned": inferencev1alpha1.ReasonNodeCordoned,
		"nogpu": inferencev1alpha1.ReasonInsufficientGPU} {
		s.g.Eventually(func() string { return s.stepStatus("gpu", step).Reason }, timeout, poll).Should(Equal(reason), step)
	}
	s.g.Expect(s.stepStatus("gpu", "gpuok").Phase).NotTo(Equal(inferencev1alpha1.PhaseDegraded), "a node with 2 GPUs fits")
	quiet(s, c)
	writes := c.Writes.Load()
	s.g.Consistently(c.Writes.Load, time.Second, poll).Should(Equal(writes), "no loop on a node problem")

	// The node appears: the step is no longer blocked by it.
	s.node(s.ns+"-ghost", 0, false)
	s.g.Eventually(func() string { return s.stepStatus("gpu", "missing").Reason }, timeout, poll).ShouldNot(Equal(inferencev1alpha1.ReasonNodeNotFound))
}

// Deleting the pipeline removes the steps, then the claim, then the volume, and then lets the pipeline go.
func TestDeletionIsOrdered(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node(s.ns+"-a", 0, false)
	s.node(s.ns+"-b", 0, false)
	p := s.faceDetection(s.ns+"-a", s.ns+"-b")
	s.bind(p)
	pvName := pipeline.PVName(s.get("face-detection"))
	pvcKey := client.ObjectKey{Namespace: s.ns, Name: "face-detection-models"}
	// Keep the claim and the volume around with a finalizer of the test's, to observe the order.
	for _, obj := range []client.Object{&corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}} {
		key := pvcKey
		if _, ok := obj.(*corev1.PersistentVolume); ok {
			key = client.ObjectKey{Name: pvName}
		}
		s.g.Expect(env.Client.Get(s.ctx, key, obj)).To(Succeed())
		obj.SetFinalizers(append(obj.GetFinalizers(), "test.keelson.dev/hold"))
		s.g.Expect(env.Client.Update(s.ctx, obj)).To(Succeed())
	}

	// Hold the step Deployments too, so that "steps first" can be seen: while one exists, the claim is untouched.
	stepDeployments, stepServices := s.holdSteps()

	s.g.Expect(env.Client.Delete(s.ctx, s.get("face-detection"))).To(Succeed())
	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseDeleting))
	// Steps go first: each is asked to go, and while any is still there the claim is not.
	s.g.Eventually(func() int { return s.deleting(stepDeployments...) }, timeout, poll).Should(Equal(2),
		"the step Deployments were not deleted")
	s.g.Eventually(func() int { return s.deleting(stepServices...) }, timeout, poll).Should(Equal(2),
		"the step Services were not deleted")
	s.g.Eventually(func() string {
		return meta.FindStatusCondition(s.get("face-detection").Status.Conditions, inferencev1alpha1.ConditionReady).Message
	}, timeout, poll).Should(ContainSubstring("step Deployments and Services to be deleted"))
	claimUntouched := func() *metav1.Time {
		var c corev1.PersistentVolumeClaim
		s.g.Expect(env.Client.Get(s.ctx, pvcKey, &c)).To(Succeed())
		return c.DeletionTimestamp
	}
	s.g.Consistently(claimUntouched, 2*time.Second, poll).Should(BeNil(), "the claim was deleted while steps still exist")
	for _, d := range stepDeployments {
		release(s, d)
	}
	s.g.Consistently(claimUntouched, time.Second, poll).Should(BeNil(), "the claim was deleted while step Services still exist")
	for _, svc := range stepServices {
		release(s, svc)
	}
	// Then the claim is deleted; the volume waits for it.
	var pvc corev1.PersistentVolumeClaim
	s.g.Eventually(func() bool {
		_ = env.Client.Get(s.ctx, pvcKey, &pvc)
		return pvc.DeletionTimestamp != nil
	}, timeout, poll).Should(BeTrue())
	var pv corev1.PersistentVolume
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Name: pvName}, &pv)).To(Succeed())
	s.g.Expect(pv.DeletionTimestamp).To(BeNil(), "the volume must outlive the claim")
	s.g.Eventually(func() string {
		return meta.FindStatusCondition(s.get("face-detection").Status.Conditions, inferencev1alpha1.ConditionReady).Message
	}, timeout, poll).Should(ContainSubstring("waiting for the models claim"))
	release(s, &pvc)
	s.g.Eventually(func() bool {
		_ = env.Client.Get(s.ctx, client.ObjectKey{Name: pvName}, &pv)
		return pv.DeletionTimestamp != nil
	}, timeout, poll).Should(BeTrue())
	release(s, &pv)
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection"}, &inferencev1alpha1.Pipeline{}))
	}, timeout, poll).Should(BeTrue(), "the pipeline is gone once its storage is")
	s.g.Expect(apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Name: pvName}, &corev1.PersistentVolume{}))).To(BeTrue())
}

// holdSteps holds the pipeline's two step Deployments and two step Services with a finalizer of the test's, once
// they exist, and returns them.
func (s *scenario) holdSteps() (deps, svcs []client.Object) {
	var dl appsv1.DeploymentList
	s.g.Eventually(func() []appsv1.Deployment {
		_ = env.Client.List(s.ctx, &dl, client.InNamespace(s.ns))
		return dl.Items
	}, timeout, poll).Should(HaveLen(2), "both step Deployments exist")
	var sl corev1.ServiceList
	s.g.Eventually(func() []corev1.Service {
		_ = env.Client.List(s.ctx, &sl, client.InNamespace(s.ns))
		return sl.Items
	}, timeout, poll).Should(HaveLen(2), "both step Services exist")
	for i := range sl.Items {
		s.hold(&sl.Items[i])
		svcs = append(svcs, &sl.Items[i])
	}
	for i := range dl.Items {
		s.hold(&dl.Items[i])
		deps = append(deps, &dl.Items[i])
	}
	return deps, svcs
}

// hold adds a finalizer of the test's to obj, to see the order of deletions; the controller may still be writing
// obj, so it is read again and the update retried on a conflict.
func (s *scenario) hold(obj client.Object) {
	s.g.Eventually(func() error {
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetFinalizers(append(obj.GetFinalizers(), "test.keelson.dev/hold"))
		return env.Client.Update(s.ctx, obj)
	}, timeout, poll).Should(Succeed())
}

// deleting counts the objects the apiserver has being deleted.
func (s *scenario) deleting(objs ...client.Object) int {
	n := 0
	for _, o := range objs {
		live := o.DeepCopyObject().(client.Object)
		if env.Client.Get(s.ctx, client.ObjectKeyFromObject(o), live) == nil && live.GetDeletionTimestamp() != nil {
			n++
		}
	}
	return n
}

// release drops every finalizer from obj (plays the controllers that would).
func release(s *scenario, obj client.Object) {
	s.g.Eventually(func() error {
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		obj.SetFinalizers(nil)
		return env.Client.Update(s.ctx, obj)
	}, timeout, poll).Should(Succeed())
}

// In steady state the controller writes nothing, even when woken up.
func TestSteadyStateWritesNothing(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.node(s.ns+"-a", 0, false)
	s.node(s.ns+"-b", 0, false)
	p := s.faceDetection(s.ns+"-a", s.ns+"-b")
	s.bind(p)
	s.rollOut("face-detection-step-0")
	s.rollOut("face-detection-step-1")
	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))
	quiet(s, c)
	writes, gets := c.Writes.Load(), c.Gets.Load()
	// Touch the step's Service (a Deployment would bump its generation even for an annotation).
	var svc corev1.Service
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "face-detection-step-0"}, &svc)).To(Succeed())
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Annotations["touched"] = "yes"
	s.g.Expect(env.Client.Patch(s.ctx, &svc, patch)).To(Succeed())
	s.g.Eventually(c.Gets.Load, timeout, poll).Should(BeNumerically(">", gets), "the Service update woke the controller")
	s.g.Consistently(c.Writes.Load, 2*time.Second, poll).Should(Equal(writes), "writes in steady state")
}

// A spec admitted while the webhook was down but impossible to run (a cycle) is reported, and nothing is created;
// a pipeline on an existing claim creates no volume or claim of its own.
func TestInvalidSpecAndExistingClaim(t *testing.T) {
	s := newScenario(t)
	startController(t)
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "loop", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "shared-models"},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: "x", Next: []string{"b"}}, {Name: "b", Image: "x", Next: []string{"a"}}},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	s.g.Eventually(s.phase("loop"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseFailed))
	c := meta.FindStatusCondition(s.get("loop").Status.Conditions, inferencev1alpha1.ConditionStepsReady)
	s.g.Expect(c.Reason).To(Equal(inferencev1alpha1.ReasonInvalidSpec))
	s.g.Expect(c.Message).To(ContainSubstring("a -> b -> a"))
	var deps appsv1.DeploymentList
	s.g.Expect(env.Client.List(s.ctx, &deps, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(deps.Items).To(BeEmpty())

	// Fixed: the steps appear; the user's claim is used, none is created.
	s.g.Eventually(func() error {
		p := s.get("loop")
		p.Spec.Steps[1].Next = nil
		return env.Client.Update(s.ctx, p)
	}, timeout, poll).Should(Succeed())
	s.g.Eventually(func() int {
		_ = env.Client.List(s.ctx, &deps, client.InNamespace(s.ns))
		return len(deps.Items)
	}, timeout, poll).Should(Equal(2))
	s.g.Expect(deps.Items[0].Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("shared-models"))
	var pvcs corev1.PersistentVolumeClaimList
	s.g.Expect(env.Client.List(s.ctx, &pvcs, client.InNamespace(s.ns))).To(Succeed())
	s.g.Expect(pvcs.Items).To(BeEmpty())
	var pvs corev1.PersistentVolumeList
	s.g.Expect(env.Client.List(s.ctx, &pvs, client.MatchingLabels{inferencev1alpha1.PipelineLabel: "loop"})).To(Succeed())
	s.g.Expect(pvs.Items).To(BeEmpty())
}

// A pipeline on the user's own claim (which the controller's cache does not hold) becomes Ready once the claim is
// Bound, though no event of that claim reaches the controller.
func TestExistingClaimBindsLater(t *testing.T) {
	s := newScenario(t)
	startController(t)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "user-models", Namespace: s.ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	s.g.Expect(env.Client.Create(s.ctx, pvc)).To(Succeed())
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "byo", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "user-models"},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: "x"}},
		}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	storage := func() metav1.ConditionStatus {
		c := meta.FindStatusCondition(s.get("byo").Status.Conditions, inferencev1alpha1.ConditionStorageReady)
		if c == nil {
			return ""
		}
		return c.Status
	}
	s.g.Eventually(storage, timeout, poll).Should(Equal(metav1.ConditionFalse))
	pvc.Status.Phase = corev1.ClaimBound
	s.g.Expect(env.Client.Status().Update(s.ctx, pvc)).To(Succeed())
	s.g.Eventually(storage, timeout, poll).Should(Equal(metav1.ConditionTrue))
}
