package daemonset

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// A pass makes at most maxWritesPerPass writes of each kind and asks for the next pass; a failed pod's node grows
// its backoff only when its deletion is in this pass.
func TestPlanBoundsEachKindOfWrite(t *testing.T) {
	var nodes []nodeView
	for i := range 600 {
		nodes = append(nodes, view(fmt.Sprintf("n%04d", i)))
	}
	p := planNodes(nodes, rolling(1, 0), newRev, newRev, now)
	if len(p.creates) != maxWritesPerPass || p.requeueAfter != cutRequeue {
		t.Errorf("600 new nodes: %d creates, requeue %s; want %d and %s", len(p.creates), p.requeueAfter, maxWritesPerPass, cutRequeue)
	}

	nodes = nodes[:0]
	for i := range 600 {
		name := fmt.Sprintf("n%04d", i)
		pod := testPod("p"+name, newRev, failed)
		pod.Spec.NodeName = name
		nodes = append(nodes, view(name, pod))
	}
	p = planNodes(nodes, rolling(1, 0), newRev, newRev, now)
	if len(p.deletes) != maxWritesPerPass || len(p.failedNodes) != maxWritesPerPass || p.failedNodes[0] != "n0000" {
		t.Errorf("600 failed pods: %d deletes, %d nodes backing off; want %d each", len(p.deletes), len(p.failedNodes), maxWritesPerPass)
	}

	p = planNodes(nodes[:10], rolling(1, 0), newRev, newRev, now)
	if len(p.deletes) != 10 || p.requeueAfter != 0 {
		t.Errorf("10 failed pods: %d deletes, requeue %s; want 10 and none", len(p.deletes), p.requeueAfter)
	}
}

// A node event wakes a DaemonSet only when it changes whether the node runs or keeps its pod, whether a node that
// runs or may run one is down, or whether the canary selector picks it.
func TestNodeConcerns(t *testing.T) {
	ds := &daemonsetv1alpha1.DaemonSet{Spec: daemonsetv1alpha1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "gpu"}}}}}
	node := func(labels map[string]string, ready bool, taints ...corev1.Taint) *corev1.Node {
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionFalse
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	}
	gpu, cpu := map[string]string{"pool": "gpu"}, map[string]string{"pool": "cpu"}
	noSchedule := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}
	for name, tc := range map[string]struct {
		old, new *corev1.Node
		want     bool
	}{
		"an eligible node joins":                      {nil, node(gpu, true), true},
		"another pool's node joins":                   {nil, node(cpu, true), false},
		"an eligible node leaves":                     {node(gpu, true), nil, true},
		"another pool's node leaves":                  {node(cpu, true), nil, false},
		"relabelled into the pool":                    {node(cpu, true), node(gpu, true), true},
		"relabelled out of the pool":                  {node(gpu, true), node(cpu, true), true},
		"an eligible node goes down":                  {node(gpu, true), node(gpu, false), true},
		"another pool's node goes down":               {node(cpu, true), node(cpu, false), false},
		"an eligible node is tainted NoSchedule":      {node(gpu, true), node(gpu, true, noSchedule), true},
		"a tainted node that keeps its pod goes down": {node(gpu, true, noSchedule), node(gpu, false, noSchedule), true},
		"another pool's node is tainted":              {node(cpu, true), node(cpu, true, noSchedule), false},
		"an unrelated label on an eligible node":      {node(gpu, true), node(map[string]string{"pool": "gpu", "x": "y"}, true), false},
	} {
		if got := nodeConcerns(ds, tc.old, tc.new); got != tc.want {
			t.Errorf("%s: nodeConcerns = %v, want %v", name, got, tc.want)
		}
	}

	one := intstr.FromInt32(1)
	ds.Spec.UpdateStrategy.RollingUpdate = &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &one,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "yes"}}}
	if !nodeConcerns(ds, node(gpu, true), node(map[string]string{"pool": "gpu", "canary": "yes"}, true)) {
		t.Error("a node that joins the canary does not concern the DaemonSet")
	}
}

// A pass makes what the client budget sends in about a second: 250 creations under 50 a second held the DaemonSet's
// worker 5 s and made the longest passes at 10,000 nodes.
func TestWritesPerPassFollowTheClientBudget(t *testing.T) {
	for _, tc := range []struct {
		cfg  *rest.Config
		want int
	}{
		{&rest.Config{QPS: 50, Burst: 100}, 50},
		{&rest.Config{QPS: 1000}, maxWritesPerPass},
		{&rest.Config{QPS: 1}, minWritesPerPass},
		{&rest.Config{}, minWritesPerPass}, // client-go's default, 5 a second
		{&rest.Config{QPS: -1}, maxWritesPerPass},
		{&rest.Config{QPS: 1000, RateLimiter: flowcontrol.NewTokenBucketRateLimiter(20, 40)}, 20},
	} {
		if got := writesPerPassFor(budgetQPS(tc.cfg)); got != tc.want {
			t.Errorf("qps %v, limiter %v: %d writes a pass, want %d", tc.cfg.QPS, tc.cfg.RateLimiter != nil, got, tc.want)
		}
	}
	if got := budgetQPS(&rest.Config{}); got != rest.DefaultQPS {
		t.Errorf("a QPS of zero reads as %v, want client-go's default %v", got, rest.DefaultQPS)
	}
}

// A pass cut to the client budget shares it among the kinds of write in turn, an update in place of a gated pod
// costing two requests; a pass within the budget is not cut.
func TestPlanSharesTheBudgetAmongKinds(t *testing.T) {
	creates := make([]podCreate, 40)
	deletes := make([]podDelete, 3)
	for i := range deletes {
		deletes[i].pod = testPod(fmt.Sprintf("d%d", i), oldRev, available)
	}
	updates := make([]podUpdate, 30)
	for i := range updates {
		updates[i].pod = testPod(fmt.Sprintf("u%d", i), oldRev, available)
		updates[i].pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: InPlaceReadyCondition}}
	}
	gates := make([]*corev1.Pod, 40)
	p := plan{creates: creates, deletes: deletes, updates: updates, gatesReady: gates}
	p.share(50)
	// Rounds of 1+2+1+1 until the 3 deletes run out, then 2+1+1: 3 deletes, 12 updates (24), 12 creates, 11 gates.
	got := []int{len(p.deletes), len(p.updates), len(p.creates), len(p.gatesReady)}
	if !slices.Equal(got, []int{3, 12, 12, 11}) || p.requeueAfter != cutRequeue {
		t.Errorf("cut to 50: deletes, updates, creates, gates %v, requeue %s; want [3 12 12 11] and %s", got, p.requeueAfter, cutRequeue)
	}
	small := plan{creates: make([]podCreate, 10), deletes: deletes}
	small.share(50)
	if len(small.creates) != 10 || len(small.deletes) != 3 || small.requeueAfter != 0 {
		t.Errorf("13 writes under 50: %d creates, %d deletes, requeue %s; want all and none", len(small.creates), len(small.deletes), small.requeueAfter)
	}
}

// The reconciler cuts its pass to the budget it was set up with: 120 new nodes under 50 a second get 50 pods, the
// first 50 in node order, and the next pass comes for the rest.
func TestAPassWritesWithinTheBudget(t *testing.T) {
	names := make([]string, 120)
	for i := range names {
		names[i] = fmt.Sprintf("n%04d", i)
	}
	w := newWorld(t, names...)
	w.r.writesPerPass = writesPerPassFor(50)
	res := w.mustReconcile()
	perNode := w.podsPerNode()
	if len(perNode) != 50 || perNode["n0000"] != 1 || perNode["n0049"] != 1 || res.RequeueAfter == 0 {
		t.Fatalf("first pass under 50 a second: pods on %d nodes (n0000: %d, n0049: %d), requeue %s; want 50 and a requeue",
			len(perNode), perNode["n0000"], perNode["n0049"], res.RequeueAfter)
	}
	for range 3 {
		w.settle()
		w.mustReconcile()
	}
	if got := len(w.podsPerNode()); got != 120 {
		t.Errorf("after three more passes: pods on %d nodes, want 120", got)
	}
}

// A surge create may take the slot a surge-ending delete of the same pass frees; a cut that drops that delete drops
// the create too. Here four failed pods' deletions come first, the budget of 5 keeps them and one create, and the
// old pod beside node a's available new one is not deleted this pass: node b must not start surging beside it.
func TestACutPlanKeepsMaxSurge(t *testing.T) {
	nodes := []nodeView{
		view("a", testPod("a-new", newRev, available), testPod("a-old", oldRev, available)),
		view("b", testPod("b-old", oldRev, available)),
	}
	for i := range 4 {
		name := fmt.Sprintf("f%d", i)
		pod := testPod(name+"-old", oldRev, failed)
		pod.Spec.NodeName = name
		nodes = append(nodes, view(name, pod))
	}
	s := rolling(1, 1)
	before := snapshot(nodes)
	p := planNodes(nodes, s, newRev, oldRev, now)
	if got := summary(p); !slices.Contains(got, "create b@new") || !slices.Contains(got, "delete a-old (Update)") {
		t.Fatalf("uncut plan %v: want node b's surge beside node a's ending", got)
	}
	p.share(5)
	checkPlan(t, nodes, s, before, p)
	if got := summary(p); slices.Contains(got, "create b@new") || slices.Contains(got, "delete a-old (Update)") {
		t.Errorf("cut plan %v: node a's surge ends in a later pass, and node b's starts after it", got)
	}
}
