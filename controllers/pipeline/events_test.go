//go:build integration

package pipeline_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

// setPodStatus writes a step pod's status, as the kubelet or the scheduler would.
func (s *scenario) setPodStatus(name string, status corev1.PodStatus) {
	s.g.Eventually(func() error {
		var pod corev1.Pod
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &pod); err != nil {
			return err
		}
		pod.Status = status
		return env.Client.Status().Update(s.ctx, &pod)
	}, timeout, poll).Should(Succeed())
}

// Each new cause of a step's trouble is a Warning event that says it, even under the reason of the one before (a
// claim not bound, then a taint), right after an event of another reason, and when its reason is one the step had
// before (a taint, then an image, then too few GPUs); a cause that stays makes no new event.
func TestEachNewCauseIsAnEvent(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.oneStep("causes", inferencev1alpha1.Step{Name: "a", Image: "x"})
	unschedulable := func(msg string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}}
	}
	// First refused for its claim, not bound yet; once it is, for a taint: the same reason, a new cause.
	s.stepPod("causes", "a", unschedulable("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."))
	s.g.Eventually(func() []string { return s.events("causes") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Warning "+inferencev1alpha1.ReasonUnschedulable), ContainSubstring("unbound immediate PersistentVolumeClaims"))))
	s.setPodStatus("causes-a-x", unschedulable("0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}."))
	s.g.Eventually(func() []string { return s.events("causes") }, timeout, poll).Should(ContainElement(
		And(HavePrefix("Warning "+inferencev1alpha1.ReasonUnschedulable), ContainSubstring("untolerated taint"))))

	s.setPodStatus("causes-a-x", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "x: not found"}}}}})
	s.g.Eventually(func() []string { return s.events("causes") }, timeout, poll).Should(ContainElement(
		HavePrefix("Warning " + inferencev1alpha1.ReasonImagePull)))

	s.setPodStatus("causes-a-x", unschedulable("0/1 nodes are available: 1 Insufficient nvidia.com/gpu."))
	// The pass that sees it tells the step's event and the pipeline's (Degraded again, for the new cause), one after
	// the other.
	s.g.Eventually(func() []string { return s.events("causes") }, timeout, poll).Should(ContainElements(
		And(HavePrefix("Warning "+inferencev1alpha1.ReasonUnschedulable), ContainSubstring("Insufficient nvidia.com/gpu")),
		And(HavePrefix("Warning PipelineDegraded"), ContainSubstring("Insufficient nvidia.com/gpu"))))

	// The same cause again in the scheduler's other words (the cluster grew a node): the status changes, and no new
	// event says so. The pass after it tells a new cause, by then the only new events (a pass records after its
	// status write, so an event of the first would be there before the second's).
	n := len(s.events("causes"))
	s.setPodStatus("causes-a-x", unschedulable("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."))
	s.g.Eventually(func() (string, error) {
		var p inferencev1alpha1.Pipeline
		err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "causes"}, &p)
		if err != nil || len(p.Status.Steps) == 0 {
			return "", err
		}
		return p.Status.Steps[0].Message, nil
	}, timeout, poll).Should(ContainSubstring("0/2 nodes"))
	s.setPodStatus("causes-a-x", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Image: "x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "x: manifest unknown"}}}}})
	s.g.Eventually(func() []string { return s.events("causes") }, timeout, poll).Should(ContainElements(
		And(HavePrefix("Warning "+inferencev1alpha1.ReasonImagePull), ContainSubstring("manifest unknown")),
		And(HavePrefix("Warning PipelineFailed"), ContainSubstring("manifest unknown"))))
	s.g.Expect(s.events("causes")).To(HaveLen(n+2), "the same cause in other words made an event")
}
