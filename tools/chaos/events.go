package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	dscontroller "github.com/keelson-dev/keelson/controllers/daemonset"
)

// eventLog watches every node and the pods of one namespace from the moment it starts, as a controller would be
// told of them, and counts: the changes to nodes, the changes to pods, and per node the creates and deletes of the
// pods one label selector picks. Watches resume where they stopped (client-go's retry watcher): no event is
// missed, and none counted twice.
type eventLog struct {
	mu    sync.Mutex
	nodes int
	// nodeChanges are the node events that change what a controller reads of a node (nodeRead); nodeRead is each
	// node's, as last seen.
	nodeChanges int
	nodeRead    map[string]string
	pods        int
	creates     map[string]int
	deletes     map[string]int
	deleting    map[types.UID]bool
	cancel      context.CancelFunc
	done        sync.WaitGroup
	err         error
}

// watchEvents starts an eventLog; stop ends it. podSelector picks the pods whose churn is counted.
func watchEvents(ctx context.Context, cfg *rest.Config, ns, podSelector string) (*eventLog, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	l := &eventLog{creates: map[string]int{}, deletes: map[string]int{}, deleting: map[types.UID]bool{},
		nodeRead: map[string]string{}}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		l.nodeRead[nodes.Items[i].Name] = nodeRead(&nodes.Items[i])
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	// Pods being deleted already were deleted before the log began.
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			l.deleting[p.UID] = true
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	l.cancel = cancel
	sel, err := labels.Parse(podSelector)
	if err != nil {
		cancel()
		return nil, err
	}
	l.follow(wctx, nodes.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Nodes().Watch(ctx, o)
	}, l.countNode)
	l.follow(wctx, pods.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Pods(ns).Watch(ctx, o)
	}, func(ev watch.Event) {
		l.pods++
		if p, ok := ev.Object.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
			l.countChurn(ev.Type, p)
		}
	})
	return l, nil
}

// follow runs one retrying watch from rv, handing each event to count under the log's lock.
func (l *eventLog) follow(ctx context.Context, rv string, w cache.WatchFuncWithContext, count func(watch.Event)) {
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w})
		if err != nil {
			l.fail(err)
			return
		}
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						l.fail(errors.New("a watch ended early"))
					}
					return
				}
				if ev.Type == watch.Error {
					l.fail(apierrors.FromObject(ev.Object))
					return
				}
				if ev.Type == watch.Bookmark {
					continue
				}
				l.mu.Lock()
				count(ev)
				l.mu.Unlock()
			}
		}
	}()
}

// countNode counts a node event, and, apart, those that change what a controller reads of the node: a node's
// creation or deletion, or a change of nodeRead. A kubelet's heartbeats change none of it.
func (l *eventLog) countNode(ev watch.Event) {
	l.nodes++
	n, ok := ev.Object.(*corev1.Node)
	if !ok {
		return
	}
	read := nodeRead(n)
	switch {
	case ev.Type == watch.Deleted:
		delete(l.nodeRead, n.Name)
		l.nodeChanges++
	case l.nodeRead[n.Name] != read || ev.Type == watch.Added:
		l.nodeRead[n.Name] = read
		l.nodeChanges++
	}
}

// nodeRead is what the DaemonSet and the Pipeline controllers read of a node, as docs/daemonset.md and
// docs/pipeline.md say they watch it: its labels, cordon, taints, allocatable resources, and its Ready condition's
// status and reason. Written out whole, so two nodes read alike compare equal.
func nodeRead(n *corev1.Node) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		fmt.Fprintf(&b, "label %s=%s\n", k, n.Labels[k])
	}
	fmt.Fprintf(&b, "unschedulable %v\n", n.Spec.Unschedulable)
	for _, t := range n.Spec.Taints {
		fmt.Fprintf(&b, "taint %s=%s:%s %v\n", t.Key, t.Value, t.Effect, t.TimeAdded)
	}
	for _, r := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
		q := n.Status.Allocatable[r]
		fmt.Fprintf(&b, "allocatable %s=%s\n", r, q.String())
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			fmt.Fprintf(&b, "ready %s/%s\n", c.Status, c.Reason)
		}
	}
	return b.String()
}

// countChurn counts a pod's creation, and its deletion once: when it is first seen being deleted, or gone.
func (l *eventLog) countChurn(t watch.EventType, p *corev1.Pod) {
	node := dscontroller.PodNode(p)
	switch {
	case t == watch.Added:
		l.creates[node]++
		if p.DeletionTimestamp != nil {
			l.deleting[p.UID] = true
			l.deletes[node]++
		}
	case (t == watch.Modified && p.DeletionTimestamp != nil) || t == watch.Deleted:
		if !l.deleting[p.UID] {
			l.deleting[p.UID] = true
			l.deletes[node]++
		}
	}
}

func (l *eventLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// stop ends the watches and returns the first error one met.
func (l *eventLog) stop() error {
	l.cancel()
	l.done.Wait()
	return l.err
}

func (l *eventLog) nodeEvents() (all, changes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodes, l.nodeChanges
}

func (l *eventLog) podEvents() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pods
}

// churn returns the selected pods' creates and deletes by node.
func (l *eventLog) churn() (creates, deletes map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.creates, l.deletes
}
