//go:build integration

package daemonset_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/daemonset"
	"github.com/keelson-dev/keelson/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.RunTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{daemonsetv1alpha1.AddToScheme}},
		func(e *testenv.Env) { env = e }))
}

const (
	timeout = 20 * time.Second
	poll    = 25 * time.Millisecond
)

// controller is a DaemonSet controller running in the test, with counters of what it did through the apiserver.
type controller struct {
	*testenv.Counts
	mgr *testenv.Manager
}

// startController runs the controller in a manager with the binary's cache options.
func startController(t *testing.T) *controller {
	t.Helper()
	mgr, counts := env.StartCountedManager(t, daemonset.CacheOptions(), isDaemonSet,
		func(mgr ctrl.Manager, c client.Client) error {
			return (&daemonset.Reconciler{Client: c}).SetupWithManager(mgr)
		})
	return &controller{Counts: counts, mgr: mgr}
}

func isDaemonSet(o client.Object) bool { _, ok := o.(*daemonsetv1alpha1.DaemonSet); return ok }

// scenario is one test's world: a namespace and nodes labelled for this test only, so tests sharing the
// cluster-scoped nodes do not see each other's.
type scenario struct {
	t     *testing.T
	g     Gomega
	ctx   context.Context
	ns    string
	label string
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{t: t, g: NewWithT(t), ctx: context.Background(), label: fmt.Sprintf("t%d", time.Now().UnixNano())}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kds-"}}
	s.g.Expect(env.Client.Create(s.ctx, ns)).To(Succeed())
	s.ns = ns.Name
	// The test apiserver deletes no namespace: a DaemonSet left behind would be reconciled by the next test's
	// controller, and its rollouts would show in the process-wide metrics that test reads.
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &daemonsetv1alpha1.DaemonSet{}, client.InNamespace(ns.Name))
	})
	return s
}

// allUpdated makes the nodes, runs name (agent:v1) on them with its pods run by a kubelet, and waits until it says
// every node runs the updated pod.
func (s *scenario) allUpdated(name string, nodes ...string) {
	s.t.Helper()
	for _, n := range nodes {
		s.node(n, nil)
	}
	s.daemonSet(name, "agent:v1")
	s.kubelet(name)
	s.g.Eventually(s.reasonOf(name, daemonsetv1alpha1.ConditionReady), timeout, poll).Should(Equal(daemonsetv1alpha1.ReasonAllNodesUpdated))
}

// node creates a Ready node carrying this scenario's label (plus labels) and deletes it when the test ends.
func (s *scenario) node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	s.t.Helper()
	all := map[string]string{"test": s.label}
	for k, v := range labels {
		all[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.label + "-" + name, Labels: all}, Spec: corev1.NodeSpec{Taints: taints}}
	s.g.Expect(env.Client.Create(s.ctx, n)).To(Succeed())
	s.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	s.setNodeReady(n.Name, true)
	return n
}

// setNodeReady plays the kubelet and the node lifecycle controller: it sets the Ready condition and, once ready,
// lifts the not-ready NoSchedule taint the apiserver puts on every new node (apps/v1's daemon pods do not
// tolerate it either).
func (s *scenario) setNodeReady(name string, ready bool) {
	s.t.Helper()
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	s.g.Eventually(func() error {
		var n corev1.Node
		if err := env.Client.Get(s.ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		if ready {
			var taints []corev1.Taint
			for _, t := range n.Spec.Taints {
				if t.Key != "node.kubernetes.io/not-ready" {
					taints = append(taints, t)
				}
			}
			if len(taints) != len(n.Spec.Taints) {
				n.Spec.Taints = taints
				if err := env.Client.Update(s.ctx, &n); err != nil {
					return err
				}
			}
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		return env.Client.Status().Update(s.ctx, &n)
	}, timeout, poll).Should(Succeed())
}

// daemonSet creates a DaemonSet of image limited to this scenario's nodes; mutate adjusts it first.
func (s *scenario) daemonSet(name, image string, mutate ...func(*daemonsetv1alpha1.DaemonSet)) *daemonsetv1alpha1.DaemonSet {
	s.t.Helper()
	ds := &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: daemonsetv1alpha1.DaemonSetSpec{Image: image}}
	// With a template.spec (here for the node selector), the pod schema requires containers: the lone "app"
	// container takes spec.image.
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"test": s.label}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
	for _, m := range mutate {
		m(ds)
	}
	s.g.Expect(env.Client.Create(s.ctx, ds)).To(Succeed())
	return ds
}

// update changes the DaemonSet, retrying on conflicts.
func (s *scenario) update(name string, mutate func(*daemonsetv1alpha1.DaemonSet)) {
	s.t.Helper()
	s.g.Eventually(func() error {
		var ds daemonsetv1alpha1.DaemonSet
		if err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &ds); err != nil {
			return err
		}
		mutate(&ds)
		return env.Client.Update(s.ctx, &ds)
	}, timeout, poll).Should(Succeed())
}

func (s *scenario) get(name string) *daemonsetv1alpha1.DaemonSet {
	var ds daemonsetv1alpha1.DaemonSet
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &ds)).To(Succeed())
	return &ds
}

// pods lists the DaemonSet's pods (those not being deleted), sorted by node.
func (s *scenario) pods(name string) []corev1.Pod {
	var list corev1.PodList
	s.g.Expect(env.Client.List(s.ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{daemonsetv1alpha1.NameLabel: name})).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return nodeOf(&out[i])+out[i].Name < nodeOf(&out[j])+out[j].Name })
	return out
}

// podsPerNode maps each node name to how many of the DaemonSet's pods it has.
func (s *scenario) podsPerNode(name string) map[string]int {
	out := map[string]int{}
	for _, p := range s.pods(name) {
		out[nodeOf(&p)]++
	}
	return out
}

// nodeOf reads the node a pod is pinned to from its required node affinity.
func nodeOf(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// setPodPhase plays the kubelet for one pod: Running with its containers ready or not, or Failed. As a kubelet does,
// it keeps the conditions others set (a readiness gate's), and the pod is Ready only when its containers are and
// every readiness gate's condition is True.
func (s *scenario) setPodPhase(p *corev1.Pod, phase corev1.PodPhase, ready bool) error {
	readyStatus := corev1.ConditionFalse
	if ready && gatesOpen(p) {
		readyStatus = corev1.ConditionTrue
	}
	p.Status.Phase = phase
	conditions := []corev1.PodCondition{{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: metav1.Now()}}
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			conditions = append(conditions, c)
		}
	}
	p.Status.Conditions = conditions
	p.Status.ContainerStatuses = containersRunning(p, ready)
	err := env.Client.Status().Update(s.ctx, p)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone or changed meanwhile: the kubelet loop comes back to it
	}
	return err
}

// containersRunning is the status of p's containers as the kubelet reports them once they run: each container's ID
// names its image, so a container whose image changed in place gets a new ID and one more restart.
func containersRunning(p *corev1.Pod, ready bool) []corev1.ContainerStatus {
	before := map[string]corev1.ContainerStatus{}
	for _, cs := range p.Status.ContainerStatuses {
		before[cs.Name] = cs
	}
	var out []corev1.ContainerStatus
	for _, c := range p.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ContainerID: "sim://" + string(p.UID) + "/" + c.Name + "/" + c.Image,
			Ready: ready, Started: &ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
		if old, ok := before[c.Name]; ok {
			cs.RestartCount = old.RestartCount
			if old.ContainerID != cs.ContainerID {
				cs.RestartCount++
			} else {
				cs.State = old.State
			}
		}
		out = append(out, cs)
	}
	return out
}

// gatesOpen reports whether every readiness gate of p has its condition True.
func gatesOpen(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		open := false
		for _, c := range p.Status.Conditions {
			open = open || (c.Type == g.ConditionType && c.Status == corev1.ConditionTrue)
		}
		if !open {
			return false
		}
	}
	return true
}

// readyAsItShould reports whether a running pod's Ready condition is what its containers and gates make it.
func readyAsItShould(p *corev1.Pod) bool {
	containersReady := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		containersReady = containersReady && cs.Ready
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return (c.Status == corev1.ConditionTrue) == (containersReady && gatesOpen(p))
		}
	}
	return false
}

// imageChanged reports whether a container of p runs another image than its spec now names (updated in place).
func imageChanged(p *corev1.Pod) bool {
	running := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		running[cs.Name] = cs.Image
	}
	for _, c := range p.Spec.Containers {
		if image, ok := running[c.Name]; ok && image != c.Image {
			return true
		}
	}
	return false
}

// kubelet plays the kubelet for the DaemonSet until the test ends: every pod that is not ready becomes Running and
// Ready, and a pod whose image changed in place restarts those containers, except on nodes listed in skip (a dead
// node's kubelet does nothing).
func (s *scenario) kubelet(name string, skip ...string) {
	s.slowKubelet(name, 0, skip...)
}

// slowKubelet is kubelet with a start-up time: a pod becomes ready only once it is startup old.
func (s *scenario) slowKubelet(name string, startup time.Duration, skip ...string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	dead := map[string]bool{}
	for _, n := range skip {
		dead[s.label+"-"+n] = true
	}
	go func() {
		ticker := time.NewTicker(poll)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			var list corev1.PodList
			if err := env.Client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{daemonsetv1alpha1.NameLabel: name}); err != nil {
				continue
			}
			for i := range list.Items {
				p := &list.Items[i]
				if p.DeletionTimestamp != nil || dead[nodeOf(p)] {
					continue
				}
				if crashes(p) {
					s.crashLoop(p)
					continue
				}
				if (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodFailed &&
					time.Since(p.CreationTimestamp.Time) >= startup) ||
					(p.Status.Phase == corev1.PodRunning && (imageChanged(p) || !readyAsItShould(p))) {
					_ = s.setPodPhase(p, corev1.PodRunning, true)
				}
			}
		}
	}()
}

// crashes reports whether p runs an image this test kubelet crash-loops: one tagged "crash".
func crashes(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if strings.HasSuffix(c.Image, ":crash") {
			return true
		}
	}
	return false
}

// crashLoop plays a kubelet whose container keeps crashing: Running, not ready, the container waiting in
// CrashLoopBackOff.
func (s *scenario) crashLoop(p *corev1.Pod) {
	if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil {
		return
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			RestartCount: 3, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}})
	}
	_ = env.Client.Status().Update(s.ctx, p)
}

// condition returns the DaemonSet's condition of type t, or nil.
func condition(ds *daemonsetv1alpha1.DaemonSet, t string) *metav1.Condition {
	for i := range ds.Status.Conditions {
		if ds.Status.Conditions[i].Type == t {
			return &ds.Status.Conditions[i]
		}
	}
	return nil
}

// reasonOf is a poll-friendly accessor: the reason of the condition, or "".
func (s *scenario) reasonOf(name, t string) func() string {
	return func() string {
		if c := condition(s.get(name), t); c != nil {
			return c.Reason
		}
		return ""
	}
}
