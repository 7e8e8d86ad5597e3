//go:build integration

package daemonset_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// Through the apiserver: a pod left without its owner reference (as `kubectl delete --cascade=orphan` leaves it) is
// adopted back, and its node gets no second pod; a pod relabelled out of the selector is released and replaced.
func TestOrphansAreAdoptedAndRelabelledPodsReleased(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.node("a", nil)
	s.node("b", nil)
	ds := s.daemonSet("agent", "agent:v1")
	s.g.Eventually(func() map[string]int { return s.podsPerNode("agent") }, timeout, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1}))

	orphan := podOnNode(s, "agent", s.label+"-a")
	patchPod(s, orphan.Name, func(p *corev1.Pod) { p.OwnerReferences = nil })
	s.g.Eventually(func() bool {
		var p corev1.Pod
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: orphan.Name}, &p)).To(Succeed())
		return metav1.IsControlledBy(&p, ds)
	}, timeout, poll).Should(BeTrue(), "the orphan was not adopted")
	s.g.Consistently(func() map[string]int { return s.podsPerNode("agent") }, time.Second, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1}), "a node got a second pod beside the orphan")

	stray := podOnNode(s, "agent", s.label+"-b")
	patchPod(s, stray.Name, func(p *corev1.Pod) { p.Labels[daemonsetv1alpha1.NameLabel] = "debugging" })
	s.g.Eventually(func() *metav1.OwnerReference {
		var p corev1.Pod
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: stray.Name}, &p)).To(Succeed())
		return metav1.GetControllerOf(&p)
	}, timeout, poll).Should(BeNil(), "the relabelled pod was not released")
	s.g.Eventually(func() map[string]int { return s.podsPerNode("agent") }, timeout, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1}), "the released pod's node got no new pod")

	// Without the name label the pod leaves the controller's cache (it selects on that label): it is released all
	// the same.
	unlabelled := podOnNode(s, "agent", s.label+"-a")
	patchPod(s, unlabelled.Name, func(p *corev1.Pod) { delete(p.Labels, daemonsetv1alpha1.NameLabel) })
	s.g.Eventually(func() *metav1.OwnerReference {
		var p corev1.Pod
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: unlabelled.Name}, &p)).To(Succeed())
		return metav1.GetControllerOf(&p)
	}, timeout, poll).Should(BeNil(), "the pod relabelled without the name label was not released")
	s.g.Eventually(func() map[string]int { return s.podsPerNode("agent") }, timeout, poll).Should(Equal(map[string]int{
		s.label + "-a": 1, s.label + "-b": 1}), "the unlabelled pod's node got no new pod")
}

// podOnNode returns the DaemonSet's pod on node.
func podOnNode(s *scenario, name, node string) corev1.Pod {
	s.t.Helper()
	for _, p := range s.pods(name) {
		if nodeOf(&p) == node {
			return p
		}
	}
	s.t.Fatalf("no pod of %s on node %s", name, node)
	return corev1.Pod{}
}

// patchPod changes a pod's metadata or spec, retrying on conflicts.
func patchPod(s *scenario, name string, mutate func(*corev1.Pod)) {
	s.t.Helper()
	s.g.Eventually(func() error {
		var p corev1.Pod
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &p); err != nil {
			return err
		}
		mutate(&p)
		return env.Client.Update(s.ctx, &p)
	}, timeout, poll).Should(Succeed())
}
