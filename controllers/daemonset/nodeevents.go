package daemonset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// nodeHandler wakes, for a node event, only the DaemonSets the change can concern (nodeConcerns): on a cluster of
// thousands of nodes and many DaemonSets, a node joining or going NotReady would otherwise cost a pass of every
// DaemonSet, each reading every node and pod.
type nodeHandler struct{ r *Reconciler }

var _ handler.TypedEventHandler[client.Object, reconcile.Request] = &nodeHandler{}

// Create wakes the DaemonSets whose pods the new node admits.
func (h *nodeHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, nil, e.Object, q)
}

// Update wakes the DaemonSets the node's change concerns.
func (h *nodeHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.ObjectOld, e.ObjectNew, q)
}

// Delete wakes the DaemonSets whose pods the node ran, or could have.
func (h *nodeHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, nil, q)
}

// Generic wakes every DaemonSet the node concerns as it is.
func (h *nodeHandler) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, nil, e.Object, q)
}

func (h *nodeHandler) enqueue(ctx context.Context, oldObj, newObj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	oldNode, _ := oldObj.(*corev1.Node)
	newNode, _ := newObj.(*corev1.Node)
	var list daemonsetv1alpha1.DaemonSetList
	if err := h.r.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		ds := &list.Items[i]
		if nodeConcerns(ds, oldNode, newNode) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}})
		}
	}
}

// nodeConcerns says whether a node's change from old to new (nil: created, or deleted) can change ds's work or
// status: whether the node should run, or keep, ds's pod; whether it is down, for a node that runs or may run one;
// whether the rollout's canary selector picks it. A node that neither admitted nor admits ds's pods concerns it not
// (a pod left on such a node goes with its own events).
func nodeConcerns(ds *daemonsetv1alpha1.DaemonSet, old, new *corev1.Node) bool {
	spec := placement(ds)
	before, after := eligibility{}, eligibility{}
	if old != nil {
		before = nodeEligibility(old, spec)
	}
	if new != nil {
		after = nodeEligibility(new, spec)
	}
	if before != after {
		return true
	}
	if !after.shouldContinueRunning {
		return false // neither before nor now does ds run a pod there
	}
	if old == nil || new == nil || nodeIsDown(old) != nodeIsDown(new) {
		return true
	}
	return canaryOf(ds, old) != canaryOf(ds, new)
}

// placement is the part of ds's pod spec that decides where its pods may run, with the tolerations every daemon pod
// gets: what nodeEligibility reads, without copying the containers.
func placement(ds *daemonsetv1alpha1.DaemonSet) *corev1.PodSpec {
	t := &ds.Spec.Template.Spec
	return &corev1.PodSpec{NodeName: t.NodeName, NodeSelector: t.NodeSelector, Affinity: t.Affinity,
		Tolerations: withDaemonTolerations(t.Tolerations, t.HostNetwork)}
}

// canaryOf says whether ds's rollout canary selector picks node (true with no selector; false with one that does
// not parse, which the pass reports).
func canaryOf(ds *daemonsetv1alpha1.DaemonSet, node *corev1.Node) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Selector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(ru.Selector)
	return err == nil && sel.Matches(labels.Set(node.Labels))
}
