package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// sizerWork is a set of WorkloadSizers, each creating and sizing its Deployment on the simulated nodes, whose
// sizes change every round: the Deployment's replicas must always be a size its sizer asked for (the round's, or the
// round before's until the round's was written), never a default; once a Deployment has the round's size it must
// keep it until the next round (a leader that froze and woke writing the size it had planned before would take it
// back: the stale write the invariant is for; a round is asked while the leader is frozen, so that what it had
// planned is stale when it wakes); and its pods must never roll, since nothing asked for a new template.
type sizerWork struct {
	c     client.Client
	ns    string
	count int
	// cs, when set, makes the invariant a watch of the Deployments, judged on every event once set up; without it
	// the invariant is read from a list.
	cs kubernetes.Interface
	watchedDeployments
	round   atomic.Int32      // the round of the last change; the sampler reads it concurrently
	initial map[string]string // template fingerprint of each Deployment after setup
	// reached is the last round whose size each Deployment was seen at, under mu (the watch and the sampler judge).
	mu      sync.Mutex
	reached map[string]int32
}

// sizeOf is the size the sizers are asked for in a round: 3, 4 and 5 in turn, so that a stale size (two rounds old)
// shows, and so does a drop to 1 (the default of an unset replicas) or 0.
func sizeOf(round int32) int32 { return 3 + (round%3+3)%3 }

func (w *sizerWork) name(i int) string { return fmt.Sprintf("chaos-%d", i) }

func (w *sizerWork) setUp(ctx context.Context) error {
	for i := range w.count {
		tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"chaos": w.name(i)}},
			Spec: corev1.PodSpec{NodeSelector: fakeNodeSelector, Tolerations: []corev1.Toleration{fakeNodeToleration},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10.2"}}}}
		wls := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.ns},
			Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: w.name(i)},
				Template: tmpl, Size: ptr.To(sizeOf(0)),
				Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app",
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}}
		if err := w.c.Create(ctx, wls); err != nil {
			return err
		}
	}
	if err := pollUntil(ctx, 0, func() (bool, error) { return w.converged(ctx) }); err != nil {
		return err
	}
	deps, err := w.deployments(ctx)
	if err != nil {
		return err
	}
	w.initial = map[string]string{}
	for _, d := range deps {
		w.initial[d.Name] = fingerprint(d.Spec.Template)
	}
	if w.cs != nil {
		w.watch, err = newDeploymentWatch(ctx, w.cs, w.ns, w.judgeDeployment)
	}
	return err
}

// change asks every sizer for the round's size, all at once: the sizer resizes a Deployment within milliseconds of
// its sizer's change, and sizers changed one after another would leave it nothing to do by the time the last was.
func (w *sizerWork) change(ctx context.Context, round int) error {
	w.round.Store(int32(round))
	var g errgroup.Group
	for i := range w.count {
		g.Go(func() error {
			patch := fmt.Sprintf(`{"spec":{"size":%d}}`, sizeOf(int32(round)))
			wls := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: w.name(i)}}
			return w.c.Patch(ctx, wls, client.RawPatch(types.MergePatchType, []byte(patch)))
		})
	}
	return g.Wait()
}

// check finds Deployments whose replicas are no size asked since they were last seen, or whose template changed:
// with a watch, at any event since the last check; without, in a list of them now. The count of Deployments is
// listed either way, and a wrong one counted among the violations (listViolations).
func (w *sizerWork) check(ctx context.Context) ([]string, error) {
	deps, err := w.deployments(ctx)
	if err != nil {
		return nil, err
	}
	var bad []string
	if w.watch != nil {
		bad = w.watch.take()
	} else {
		for i := range deps {
			bad = append(bad, w.judgeDeployment(&deps[i])...)
		}
	}
	if w.initial != nil && len(deps) != w.count {
		bad = append(bad, fmt.Sprintf("%d Deployments, want %d", len(deps), w.count))
		w.listViolations.Add(1)
	}
	sort.Strings(bad)
	return bad, nil
}

// judgeDeployment says what is wrong with one Deployment as it stands: replicas that are no size asked since the
// round it was last seen at (a size gone back to an earlier round's is a stale write), or a new pod template. Rounds
// move on one at a time, or two when one is asked during a freeze, so a Deployment the fault caught a round behind
// may be seen at any size of the rounds from the one it last had to the last asked.
func (w *sizerWork) judgeDeployment(d *appsv1.Deployment) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad []string
	round := w.round.Load()
	if w.reached == nil {
		w.reached = map[string]int32{}
	}
	r, since := ptr.Deref(d.Spec.Replicas, 1), w.reached[d.Name]
	if at, ok := roundOfSize(r, since, round); ok {
		w.reached[d.Name] = at
	} else if _, stale := roundOfSize(r, since-2, since-1); stale && since > 0 {
		bad = append(bad, fmt.Sprintf("Deployment %s went back to %d replicas after it had round %d's %d: a stale write",
			d.Name, r, since, sizeOf(since)))
	} else {
		bad = append(bad, fmt.Sprintf("Deployment %s has %d replicas; its sizer asked for %d", d.Name, r, sizeOf(round)))
	}
	if want, ok := w.initial[d.Name]; ok && fingerprint(d.Spec.Template) != want {
		bad = append(bad, fmt.Sprintf("Deployment %s has a new pod template: its pods roll though nothing asked for it", d.Name))
	}
	return bad
}

// roundOfSize is the latest round from first to last (no more than the three whose sizes differ) whose size is r.
func roundOfSize(r, first, last int32) (int32, bool) {
	for k := last; k >= max(first, last-2); k-- {
		if sizeOf(k) == r {
			return k, true
		}
	}
	return 0, false
}

// left counts the Deployments not yet at the round's size.
func (w *sizerWork) left(ctx context.Context) (int, int, error) {
	deps, err := w.deployments(ctx)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, d := range deps {
		if ptr.Deref(d.Spec.Replicas, 1) != sizeOf(w.round.Load()) {
			n++
		}
	}
	return n, w.count, nil
}

// maxHold: a round's resizes are made within a few hundred milliseconds.
func (w *sizerWork) maxHold() time.Duration { return 300 * time.Millisecond }

func (w *sizerWork) deployments(ctx context.Context) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	err := w.c.List(ctx, &list, client.InNamespace(w.ns))
	return list.Items, err
}

// converged: every sizer observed its generation and is Ready, and every Deployment has the round's size.
func (w *sizerWork) converged(ctx context.Context) (bool, error) {
	var list sizerv1alpha1.WorkloadSizerList
	if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
		return false, err
	}
	if len(list.Items) != w.count {
		return false, nil
	}
	for _, s := range list.Items {
		if s.Status.ObservedGeneration < s.Generation || !conditionTrue(s.Status.Conditions, "Ready") {
			return false, nil
		}
	}
	deps, err := w.deployments(ctx)
	if err != nil || len(deps) != w.count {
		return false, err
	}
	for _, d := range deps {
		if want := sizeOf(w.round.Load()); ptr.Deref(d.Spec.Replicas, 1) != want || d.Status.ReadyReplicas != want {
			return false, nil
		}
	}
	return true, nil
}

// conditionTrue reports whether the condition of that type is True.
func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// fingerprint identifies a pod template: any change of it rolls the pods.
func fingerprint(t corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
