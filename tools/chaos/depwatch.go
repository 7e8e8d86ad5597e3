package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// deploymentWatch judges the Deployments of a namespace on every event an informer delivers, rather than on a list
// now and then: a leader that froze and woke writes what it had planned before, and the leader that holds the lease
// puts the right value back within milliseconds, between two lists. judge says what is wrong with one Deployment as
// it now stands (nothing when all is well); it is called with the watch's lock held, one event at a time.
type deploymentWatch struct {
	mu    sync.Mutex
	judge func(*appsv1.Deployment) []string
	// synced is set once the informer's first list has been delivered and judged; events counts the events judged
	// since, violations those that broke the invariant, with what broke it since the last take.
	synced bool
	verdicts
}

// newDeploymentWatch starts an informer on the Deployments of namespace ns, until ctx ends, and returns once it has
// synced and judged each Deployment it listed.
func newDeploymentWatch(ctx context.Context, cs kubernetes.Interface, ns string, judge func(*appsv1.Deployment) []string) (*deploymentWatch, error) {
	w := &deploymentWatch{judge: judge}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.AppsV1().Deployments(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().Deployments(ns).Watch(ctx, o)
		},
	}
	// A client that cannot stream the first list as watch events (a fake one) says so, and is listed instead.
	inf := toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, cs), &appsv1.Deployment{}, 0,
		toolscache.Indexers{})
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	// The handler's own sync too: the first list's events are delivered (and not judged) before the store is judged.
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		return nil, fmt.Errorf("the watch of %s's Deployments did not sync", ns)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.synced = true
	for _, obj := range inf.GetStore().List() {
		if d, ok := obj.(*appsv1.Deployment); ok {
			w.judgeOne(d)
		}
	}
	return w, nil
}

// observe judges one Deployment as an event delivered it, once the first list is in.
func (w *deploymentWatch) observe(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced {
		w.judgeOne(d)
	}
}

// judgeOne judges d; w.mu is held.
func (w *deploymentWatch) judgeOne(d *appsv1.Deployment) { w.record(w.judge(d)) }

// take returns what broke the invariant since the last take.
func (w *deploymentWatch) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.takeFound()
}

// judged is how many events the watch judged and how many broke the invariant.
func (w *deploymentWatch) judged() (events, violations int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, w.violations
}

// watchedDeployments is the part of a workload whose Deployments a watch judges at every event (nil: a list does),
// with the violations found beside it by listing what a watch cannot show.
type watchedDeployments struct {
	watch          *deploymentWatch
	listViolations atomic.Int32
}

// judged is how many Deployment events the watch judged and how many broke the invariant, the list's findings
// included (0, 0 without a watch).
func (w *watchedDeployments) judged() (events, violations int) {
	if w.watch == nil {
		return 0, 0
	}
	events, violations = w.watch.judged()
	return events, violations + int(w.listViolations.Load())
}
