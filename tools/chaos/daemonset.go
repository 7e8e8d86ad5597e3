package main

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
)

// daemonSetWork is a DaemonSet on every simulated node, rolled without surge: two pods on one node that run or are
// about to are never allowed, whatever happens to the controller.
type daemonSetWork struct {
	c     client.Client
	ns    string
	nodes int
	// name is the DaemonSet's name and its pods' "chaos" label; daemonSetName when empty.
	name string
	// cs, when set, makes the invariant a watch of the pods (podWatch), judged on every event once set up; budget
	// also holds the rollout to its maxUnavailable throughout. Without cs the invariant is read from a list.
	cs     kubernetes.Interface
	budget bool
	watch  *podWatch
	// round is the round of the last change, which the pod template carries as an annotation.
	round atomic.Int32
}

// dsName is the DaemonSet's name.
func (w *daemonSetWork) dsName() string {
	if w.name == "" {
		return daemonSetName
	}
	return w.name
}

// fakeNodeSelector and fakeNodeToleration put a pod on the simulated nodes only.
var (
	fakeNodeSelector   = localcluster.FakeNodeLabels
	fakeNodeToleration = corev1.Toleration{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
)

const daemonSetName = "chaos"

// object is the DaemonSet: on every simulated node, maxSurge 0, maxUnavailable 10%.
func (w *daemonSetWork) object() *daemonsetv1alpha1.DaemonSet {
	tenPercent, zero := intstr.FromString("10%"), intstr.FromInt32(0)
	return &daemonsetv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: w.dsName(), Namespace: w.ns},
		Spec: daemonsetv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"chaos": w.dsName()}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"chaos": w.dsName()}},
				Spec: corev1.PodSpec{NodeSelector: fakeNodeSelector, Tolerations: []corev1.Toleration{fakeNodeToleration},
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10.2"}}}},
			UpdateStrategy: daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
				RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &tenPercent, MaxSurge: &zero}}}}
}

func (w *daemonSetWork) setUp(ctx context.Context) error {
	ds := w.object()
	if err := w.c.Create(ctx, ds); err != nil {
		return err
	}
	if err := pollUntil(ctx, 0, func() (bool, error) { return w.converged(ctx) }); err != nil || w.cs == nil {
		return err
	}
	var nodes corev1.NodeList
	if err := w.c.List(ctx, &nodes, client.MatchingLabels(fakeNodeSelector)); err != nil {
		return err
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	budget := -1
	if w.budget {
		budget = tenPercentOf(len(names))
	}
	watch, err := newPodWatch(ctx, w.cs, w.ns, "chaos="+w.dsName(), names, budget)
	if err != nil {
		return err
	}
	w.watch = watch
	return nil
}

// judged is how many pod events the watch judged and how many broke the invariant (0, 0 without a watch).
func (w *daemonSetWork) judged() (events, violations int) {
	if w.watch == nil {
		return 0, 0
	}
	w.watch.mu.Lock()
	defer w.watch.mu.Unlock()
	return w.watch.events, w.watch.violations
}

// change rolls the DaemonSet to a new template.
func (w *daemonSetWork) change(ctx context.Context, round int) error {
	var ds daemonsetv1alpha1.DaemonSet
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.dsName()}, &ds); err != nil {
		return err
	}
	base := ds.DeepCopy()
	if ds.Spec.Template.Annotations == nil {
		ds.Spec.Template.Annotations = map[string]string{}
	}
	ds.Spec.Template.Annotations["chaos/round"] = strconv.Itoa(round)
	w.round.Store(int32(round))
	return w.c.Patch(ctx, &ds, client.MergeFrom(base))
}

// left counts the nodes without an available pod of the round's template.
func (w *daemonSetWork) left(ctx context.Context) (int, int, error) {
	pods, err := w.pods(ctx)
	if err != nil {
		return 0, 0, err
	}
	done := map[string]bool{}
	round := strconv.Itoa(int(w.round.Load()))
	for i := range pods {
		p := &pods[i]
		if live(p) && podReady(p) && p.Annotations["chaos/round"] == round {
			done[nodeOfSpec(p)] = true
		}
	}
	return max(w.nodes-len(done), 0), w.nodes, nil
}

// maxHold: a round rolls 10% of the nodes at a time, each step a second or two.
func (w *daemonSetWork) maxHold() time.Duration { return 3 * time.Second }

// check returns what broke the invariant: with a watch, on any event since the last check; without, in a list of
// the pods now (judgePods: a pod counts on its node from its creation, terminating pods included).
func (w *daemonSetWork) check(ctx context.Context) ([]string, error) {
	if w.watch != nil {
		return w.watch.take(), nil
	}
	pods, err := w.pods(ctx)
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]*corev1.Pod{}
	for i := range pods {
		byUID[pods[i].UID] = &pods[i]
	}
	return judgePods(byUID, nil, -1), nil
}

// pods lists the DaemonSet's pods from the apiserver (not a cache: the sampler must see what is, not what was).
func (w *daemonSetWork) pods(ctx context.Context) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := w.c.List(ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{"chaos": w.dsName()})
	return list.Items, err
}

// converged: the status reports every node updated and available for the current generation, and every node runs
// exactly one live pod, of the current revision.
func (w *daemonSetWork) converged(ctx context.Context) (bool, error) {
	var ds daemonsetv1alpha1.DaemonSet
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.dsName()}, &ds); err != nil {
		return false, err
	}
	n := int32(w.nodes)
	st := ds.Status
	if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != n || st.UpdatedNumberScheduled != n ||
		st.NumberAvailable != n || st.NumberMisscheduled != 0 {
		return false, nil
	}
	pods, err := w.pods(ctx)
	if err != nil {
		return false, err
	}
	revisions := map[string]bool{}
	nodes := map[string]int{}
	for _, p := range pods {
		if live(&p) {
			nodes[p.Spec.NodeName]++
			revisions[p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] = true
		}
	}
	if len(nodes) != w.nodes || len(revisions) != 1 {
		return false, nil
	}
	for _, count := range nodes {
		if count != 1 {
			return false, nil
		}
	}
	return true, nil
}
