package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// podWatch judges a DaemonSet's invariant on every event of its pods, as an informer delivers them, rather than on a
// list now and then (which misses a second pod that comes and goes between two lists): no node may hold two pods
// that run or are about to (terminating pods included: no new pod goes to a node while its old one stops), and, with
// a budget, no more nodes than maxUnavailable may lack an available pod. A pod's node is read from its spec, as the
// scheduler and the kubelet read it: spec.nodeName once bound, else the node its required affinity names.
type podWatch struct {
	mu sync.Mutex
	// pods are the DaemonSet's pods as last seen, by UID.
	pods map[types.UID]*corev1.Pod
	// nodes are the pool's nodes; budget how many of them may lack an available pod (-1: not checked).
	nodes  []string
	budget int
	// synced is set once the informer's first list has been delivered: judged one by one as they arrive, its pods
	// would read as nodes without a pod. events counts the events judged since; violations those that broke the
	// invariant, with what broke it since the last take.
	synced bool
	verdicts
}

// newPodWatch starts an informer on the pods of namespace ns labelled selector, until ctx ends, and returns once it
// has synced.
func newPodWatch(ctx context.Context, cs kubernetes.Interface, ns, selector string, nodes []string, budget int) (*podWatch, error) {
	w := &podWatch{pods: map[types.UID]*corev1.Pod{}, nodes: nodes, budget: budget}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) { w.observe(obj, true) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the watch of %s's pods did not sync", ns)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.synced = true
	w.judge()
	return w, nil
}

// observe records one event and judges the invariant as it stands after it.
func (w *podWatch) observe(obj any, gone bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, gone = d.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone {
		delete(w.pods, pod.UID)
	} else {
		w.pods[pod.UID] = pod
	}
	if w.synced {
		w.judge()
	}
}

// judge judges the invariant over the pods as they stand; w.mu is held.
func (w *podWatch) judge() { w.record(judgePods(w.pods, w.nodes, w.budget)) }

// take returns what broke the invariant since the last take.
func (w *podWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.takeFound()
}

// judgePods is the invariant over pods: the nodes holding two pods that run or are about to, and, when budget is not
// negative, a count of nodes without an available pod above it.
func judgePods(pods map[types.UID]*corev1.Pod, nodes []string, budget int) []string {
	byNode := map[string][]string{}
	available := map[string]bool{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // its containers have stopped
		}
		node := nodeOfSpec(p)
		if node == "" {
			continue
		}
		byNode[node] = append(byNode[node], p.Name)
		if p.DeletionTimestamp == nil && podReady(p) {
			available[node] = true
		}
	}
	var bad []string
	for node, names := range byNode {
		if len(names) > 1 {
			sort.Strings(names)
			bad = append(bad, fmt.Sprintf("node %s holds %d pods (%s)", node, len(names), strings.Join(names, ", ")))
		}
	}
	if budget >= 0 {
		unavailable := 0
		for _, n := range nodes {
			if !available[n] {
				unavailable++
			}
		}
		if unavailable > budget {
			bad = append(bad, fmt.Sprintf("%d nodes without an available pod, more than maxUnavailable %d", unavailable, budget))
		}
	}
	sort.Strings(bad)
	return bad
}

// nodeOfSpec is the node a pod runs on or will: spec.nodeName once bound, else the one node its required node
// affinity names by metadata.name ("" for none).
func nodeOfSpec(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// tenPercentOf is maxUnavailable 10% of n nodes, rounded up as the controller rounds it.
func tenPercentOf(n int) int { return int(math.Ceil(float64(n) / 10)) }
