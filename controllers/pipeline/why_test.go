//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// stepPod creates a pod of a step with the given status, as the kubelet or the scheduler would have written it.
func (s *scenario) stepPod(pipelineName, step string, status corev1.PodStatus) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pipelineName + "-" + step + "-x", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: pipelineName, inferencev1alpha1.StepLabel: step}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "x"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	pod.Status = status
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())
}

// stuckPod creates a pod of a step that sits in ContainerCreating on its node, and the event (reason, message) that
// says why, as the kubelet or the attach controller would have written them.
func (s *scenario) stuckPod(pipelineName, step, reason, message string) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pipelineName + "-" + step + "-stuck", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: pipelineName, inferencev1alpha1.StepLabel: step}},
		Spec: corev1.PodSpec{NodeName: s.ns + "-node", Containers: []corev1.Container{{Name: "server", Image: "x"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	s.podEvent(pod, reason, message)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())
}

// podEvent records a core/v1 event on a pod, as the kubelet does.
func (s *scenario) podEvent(pod *corev1.Pod, reason, message string) {
	s.g.Expect(env.Client.Create(s.ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: s.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, Namespace: s.ns, UID: pod.UID},
		Reason:         reason, Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "kubelet"},
		Message: message, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1})).To(Succeed())
}

// Why a step cannot start, from what the kubelet and the scheduler wrote: an image that cannot be pulled (not a
// crash loop), a pod the scheduler cannot place (its message: the untolerated taint, the missing free GPUs). Each
// is in the step's status and in a Warning event.
func TestWhyAStepCannotStart(t *testing.T) {
	s := newScenario(t)
	startController(t)
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "why", Namespace: s.ns},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"},
			Steps: []inferencev1alpha1.Step{
				{Name: "pull", Image: "registry.example/nope:v1"},
				{Name: "tainted", Image: "x"},
				{Name: "gpus", Image: "x"},
				{Name: "mount", Image: "x"},
				{Name: "attach", Image: "x"},
			}}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	s.g.Eventually(func() *inferencev1alpha1.Pipeline { return s.get("why") }, timeout, poll).Should(
		HaveField("Status.StepsReady", "0/5"))

	s.stepPod("why", "pull", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "registry.example/nope:v1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: "failed to pull image \"registry.example/nope:v1\": not found"}}}}})
	unschedulable := func(msg string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}}
	}
	s.stepPod("why", "tainted", unschedulable("0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 2 node(s) didn't match Pod's node affinity/selector."))
	s.stepPod("why", "gpus", unschedulable("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."))

	// A pod on its node whose share cannot be mounted: only its events say why.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "why-mount-x", Namespace: s.ns,
		Labels: map[string]string{inferencev1alpha1.PipelineLabel: "why", inferencev1alpha1.StepLabel: "mount"}},
		Spec: corev1.PodSpec{NodeName: s.ns + "-node", Containers: []corev1.Container{{Name: "server", Image: "x"}}}}
	s.g.Expect(env.Client.Create(s.ctx, pod)).To(Succeed())
	s.g.Expect(env.Client.Create(s.ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "why-mount-x.1", Namespace: s.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, Namespace: s.ns, UID: pod.UID},
		Reason:         "FailedMount", Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "kubelet"},
		Message:        `MountVolume.SetUp failed for volume "models" : mount failed: exit status 32: access denied by server`,
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1})).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	s.g.Expect(env.Client.Status().Update(s.ctx, pod)).To(Succeed())

	// A pod whose ReadWriteOnce claim is attached to another node: the attach controller's event says so.
	s.stuckPod("why", "attach", "FailedAttachVolume", `Multi-Attach error for volume "pvc-1" Volume is already used by pod(s) other-7f9c`)

	for step, want := range map[string]struct{ reason, says string }{
		"attach":  {inferencev1alpha1.ReasonFailedAttachVolume, "Multi-Attach error for volume"},
		"mount":   {inferencev1alpha1.ReasonFailedMount, "access denied by server"},
		"pull":    {inferencev1alpha1.ReasonImagePull, "not found"},
		"tainted": {inferencev1alpha1.ReasonUnschedulable, "untolerated taint {nvidia.com/gpu: present}"},
		"gpus":    {inferencev1alpha1.ReasonUnschedulable, "Insufficient nvidia.com/gpu"},
	} {
		s.g.Eventually(func() string { return s.stepStatus("why", step).Reason }, timeout, poll).Should(Equal(want.reason), step)
		s.g.Expect(s.stepStatus("why", step).Message).To(ContainSubstring(want.says), step)
		s.g.Eventually(func() []string { return s.events("why") }, timeout, poll).Should(ContainElement(
			And(HavePrefix("Warning "+want.reason+": Step "+step+":"), ContainSubstring(want.says))), step)
	}
	s.g.Expect(s.stepStatus("why", "pull").Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	st := s.get("why").Status
	s.g.Expect(st.Phase).To(Equal(inferencev1alpha1.PhaseFailed))
	s.g.Expect(st.Conditions).To(ContainElement(And(HaveField("Type", inferencev1alpha1.ConditionReady),
		HaveField("Reason", inferencev1alpha1.ReasonImagePull))), "the Ready reason is the worst step's")
}

// A crash-looping step stays CrashLoopBackOff while the kubelet restarts its container (the pod's status cycles
// through waiting, running and terminated), instead of flipping to Starting and back on every restart, and its
// Warning event is not sent again.
func TestCrashLoopDoesNotFlicker(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("crash", inferencev1alpha1.Step{Name: "a", Image: "x"})
	s.g.Eventually(func() string { return s.stepStatus("crash", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonStarting))
	crashed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
		Message: "model dir not found", FinishedAt: metav1.Now()}}
	s.stepPod("crash", "a", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		RestartCount: 3, LastTerminationState: crashed,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}})
	s.g.Eventually(func() string { return s.stepStatus("crash", "a").Reason }, timeout, poll).Should(Equal(inferencev1alpha1.ReasonCrashLooping))

	// The kubelet restarts the container: running, not ready, then terminated again.
	for restart, state := range []corev1.ContainerState{{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, crashed} {
		var pod corev1.Pod
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "crash-a-x"}, &pod)).To(Succeed())
		pod.Status.ContainerStatuses[0].State = state
		pod.Status.ContainerStatuses[0].RestartCount = int32(4 + restart)
		s.g.Expect(env.Client.Status().Update(s.ctx, &pod)).To(Succeed())
		s.g.Consistently(func() string { return s.stepStatus("crash", "a").Reason }, time.Second, poll).Should(
			Equal(inferencev1alpha1.ReasonCrashLooping), "restart %d", restart)
	}
	// Sent once: a second one would fold into a series of the first (the recorder counts repeats).
	crashEvents := func() []eventsv1.Event {
		var list eventsv1.EventList
		s.g.Expect(env.Client.List(s.ctx, &list, client.InNamespace(s.ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Name == "crash" && e.Reason == inferencev1alpha1.ReasonCrashLooping {
				out = append(out, e)
			}
		}
		return out
	}
	s.g.Eventually(crashEvents, timeout, poll).Should(HaveLen(1))
	s.g.Consistently(crashEvents, time.Second, poll).Should(ConsistOf(HaveField("Series", BeNil())))
}
