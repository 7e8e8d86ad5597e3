package daemonset

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// world is a cluster in memory for tests of Reconcile where the order of reads, writes and watch events matters and
// must be exact: live is what the apiserver holds (and what APIReader reads); the reconciler's client is a cache
// over it that can lag. Pods in hidden are missing from the cache's lists (their creation event has not come yet),
// staleDS is the DaemonSet the cache still returns (it has not seen a newer write), and onPodList runs while the
// cache answers a pod list (an event landing in the middle of a pass). Watch events reach the reconciler only when
// the test delivers them.
type world struct {
	t     *testing.T
	ctx   context.Context
	live  client.WithWatch
	r     *Reconciler
	clock time.Time
	key   types.NamespacedName

	hidden    map[types.UID]bool
	staleDS   *daemonsetv1alpha1.DaemonSet
	onPodList func()
	// beforePodList runs once, before the cache answers a pod list: a change the list then shows.
	beforePodList func()
	statusWrites  int
	// delivered are the pods whose creation event the reconciler has had, as they were then.
	delivered map[types.UID]*corev1.Pod
	// step is how far the clock moves before each pass.
	step time.Duration
	uids int
	// createErr, when set, is what the apiserver answers every create with; refusedCreates counts those answers.
	createErr      error
	refusedCreates int
	// deleteErr, when set, is what the apiserver answers every delete of a pod with.
	deleteErr error
	// statusErr, when set, is what the apiserver answers every status write with.
	statusErr error
}

const worldNamespace = "ns"

// newWorld makes a DaemonSet "agent" of image agent:v1 and Ready nodes, and a reconciler that has not run yet.
func newWorld(t *testing.T, nodes ...string) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, daemonsetv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ds := &daemonsetv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: worldNamespace, UID: "ds-uid", Generation: 1},
		Spec:       daemonsetv1alpha1.DaemonSetSpec{Image: "agent:v1"},
	}
	objs := []client.Object{ds}
	for _, n := range nodes {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	}
	w := &world{t: t, ctx: context.Background(), clock: now, key: client.ObjectKeyFromObject(ds),
		hidden: map[types.UID]bool{}, delivered: map[types.UID]*corev1.Pod{}, step: 2 * statusInterval}
	w.live = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&daemonsetv1alpha1.DaemonSet{}).
		WithIndex(&corev1.Pod{}, ownerIndex, ownerOf).
		WithIndex(&appsv1.ControllerRevision{}, ownerIndex, ownerOf).
		WithIndex(&corev1.Pod{}, orphanIndex, orphanOf).
		WithIndex(&appsv1.ControllerRevision{}, orphanIndex, orphanOf).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.Pod); ok && w.deleteErr != nil {
				return w.deleteErr
			}
			return c.Delete(ctx, obj, opts...)
		}, Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if w.createErr != nil {
				w.refusedCreates++
				return w.createErr
			}
			// The apiserver gives every object a UID; the fake client does not, and pods are told apart by it.
			w.uids++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", w.uids)))
			return c.Create(ctx, obj, opts...)
		}}).
		Build()
	w.r = w.newReconciler()
	return w
}

// newReconciler is a reconciler as a freshly started process (or a newly elected leader) has it: empty memory.
func (w *world) newReconciler() *Reconciler {
	cache := interceptor.NewClient(w.live, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if ds, ok := obj.(*daemonsetv1alpha1.DaemonSet); ok && w.staleDS != nil {
				w.staleDS.DeepCopyInto(ds)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && w.beforePodList != nil {
				hook := w.beforePodList
				w.beforePodList = nil
				hook()
			}
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			pods, ok := list.(*corev1.PodList)
			if !ok {
				return nil
			}
			if w.onPodList != nil {
				hook := w.onPodList
				w.onPodList = nil
				hook()
			}
			var seen []corev1.Pod
			for _, p := range pods.Items {
				if !w.hidden[p.UID] {
					seen = append(seen, p)
				}
			}
			pods.Items = seen
			return nil
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.statusWrites++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*daemonsetv1alpha1.DaemonSet); ok && w.statusErr != nil {
				return w.statusErr
			}
			w.statusWrites++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return &Reconciler{Client: cache, APIReader: w.live, Recorder: events.NewFakeRecorder(1000), Now: func() time.Time { return w.clock }}
}

// reconcile runs one pass, step later than the last one (by default past the status pacer's interval).
func (w *world) reconcile() (ctrl.Result, error) {
	w.t.Helper()
	w.clock = w.clock.Add(w.step)
	return w.r.Reconcile(w.ctx, ctrl.Request{NamespacedName: w.key})
}

// mustReconcile runs one pass that must succeed.
func (w *world) mustReconcile() ctrl.Result {
	w.t.Helper()
	res, err := w.reconcile()
	if err != nil {
		w.t.Fatalf("reconcile: %v", err)
	}
	return res
}

// ds reads the DaemonSet as stored.
func (w *world) ds() *daemonsetv1alpha1.DaemonSet {
	w.t.Helper()
	var ds daemonsetv1alpha1.DaemonSet
	if err := w.live.Get(w.ctx, w.key, &ds); err != nil {
		w.t.Fatal(err)
	}
	return &ds
}

// pods lists every pod stored in the namespace.
func (w *world) pods() []corev1.Pod {
	w.t.Helper()
	var list corev1.PodList
	if err := w.live.List(w.ctx, &list, client.InNamespace(worldNamespace)); err != nil {
		w.t.Fatal(err)
	}
	return list.Items
}

// podsPerNode counts the stored pods the DaemonSet controls, per node.
func (w *world) podsPerNode() map[string]int {
	out := map[string]int{}
	for _, p := range w.pods() {
		if controllerUID(&p) == "ds-uid" && p.DeletionTimestamp == nil {
			out[PodNode(&p)]++
		}
	}
	return out
}

// hideAll makes the cache lag: it has not seen any pod stored so far.
func (w *world) hideAll() {
	for _, p := range w.pods() {
		w.hidden[p.UID] = true
	}
}

// deliverCreations delivers the creation events of the hidden pods to the reconciler's handler, and leaves them
// hidden: the events land before the list they belong to is answered.
func (w *world) deliverCreations() {
	h := &podHandler{r: w.r}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for _, p := range w.pods() {
		if w.hidden[p.UID] {
			h.Create(w.ctx, event.CreateEvent{Object: &p}, q)
			w.delivered[p.UID] = p.DeepCopy()
		}
	}
}

// settle lets the cache catch up: it shows every stored pod, and the reconciler has had the creation and deletion
// events it has not had yet.
func (w *world) settle() {
	h := &podHandler{r: w.r}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	stored := map[types.UID]bool{}
	for _, p := range w.pods() {
		stored[p.UID] = true
		if w.delivered[p.UID] == nil {
			h.Create(w.ctx, event.CreateEvent{Object: &p}, q)
			w.delivered[p.UID] = p.DeepCopy()
		}
	}
	for uid, p := range w.delivered {
		if !stored[uid] {
			h.Delete(w.ctx, event.DeleteEvent{Object: p}, q)
			delete(w.delivered, uid)
		}
	}
	w.hidden = map[types.UID]bool{}
}

// setPod changes a stored pod.
func (w *world) setPod(name string, mutate func(*corev1.Pod)) {
	w.t.Helper()
	var p corev1.Pod
	if err := w.live.Get(w.ctx, client.ObjectKey{Namespace: worldNamespace, Name: name}, &p); err != nil {
		w.t.Fatal(err)
	}
	mutate(&p)
	status := *p.Status.DeepCopy()
	if err := w.live.Update(w.ctx, &p); err != nil { // writes all but the status
		w.t.Fatal(err)
	}
	p.Status = status
	if err := w.live.Status().Update(w.ctx, &p); err != nil {
		w.t.Fatal(err)
	}
}

// podOn returns the name of the DaemonSet's only pod on node.
func (w *world) podOn(node string) string {
	w.t.Helper()
	var names []string
	for _, p := range w.pods() {
		if PodNode(&p) == node && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	if len(names) != 1 {
		w.t.Fatalf("want one pod on node %s, found %v", node, names)
	}
	return names[0]
}
