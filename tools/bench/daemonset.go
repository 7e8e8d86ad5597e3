package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// The two implementations compared.
const (
	implKeelson = "keelson"
	implBuiltin = "builtin"
)

// The benchmarks a trial can belong to.
const (
	benchConvergence   = "convergence"
	benchRollingUpdate = "rolling-update"
	// benchInPlace is Keelson's image-only rolling update with inPlace: IfPossible and the readiness gate disabled
	// (a daemon no Service sends traffic to), compared with the built-in's rolling update (which recreates every
	// pod) of the same run; benchInPlaceGated the same with the readiness gate (the default).
	benchInPlace      = "in-place-update"
	benchInPlaceGated = "in-place-update-gated"
	// benchScale is convergence at the one large pool size, one repetition per implementation.
	benchScale = "scale"
)

// The image every bench pod starts with, and the one a rolling update changes it to. kwok runs nothing, so neither
// is pulled.
const (
	benchImage     = "registry.k8s.io/pause:3.10.2"
	benchImageNext = "localhost/keelson-bench-next:v2"
)

// benchPodTemplate is the same for both: a pause container on every simulated node (kwok runs nothing, so the
// image is never pulled), tolerating their taint.
func benchPodTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"bench": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"keelson.dev/fake-node": "true"},
			Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:   []corev1.Container{{Name: "pause", Image: benchImage}},
		},
	}
}

// inPlaceMode is how a Keelson DaemonSet of the bench may update its pods in place.
type inPlaceMode int

const (
	recreate      inPlaceMode = iota // inPlace: Never
	inPlaceNoGate                    // inPlace: IfPossible, inPlaceReadinessGate: Disabled
	inPlaceGated                     // inPlace: IfPossible, with the readiness gate
)

// newDaemonSet returns the implementation's DaemonSet named name; both roll with maxUnavailable 10%. mode says how
// Keelson's updates its pods.
func newDaemonSet(impl, ns, name string, mode inPlaceMode) client.Object {
	tenPercent := intstr.FromString("10%")
	if impl == implBuiltin {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": name}},
				Template: benchPodTemplate(name),
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &tenPercent}}},
		}
	}
	ds := &daemonsetv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: daemonsetv1alpha1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": name}},
			Template: benchPodTemplate(name),
			UpdateStrategy: daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
				RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &tenPercent}}},
	}
	if mode != recreate {
		ds.Spec.UpdateStrategy.RollingUpdate.InPlace = daemonsetv1alpha1.InPlaceIfPossible
	}
	if mode == inPlaceNoGate {
		ds.Spec.UpdateStrategy.RollingUpdate.InPlaceReadinessGate = daemonsetv1alpha1.InPlaceReadinessGateDisabled
	}
	return ds
}

// converged says whether the DaemonSet's own status reports n pods updated and available, for its current
// generation.
func converged(obj client.Object, n int32) bool {
	switch d := obj.(type) {
	case *appsv1.DaemonSet:
		return d.Status.ObservedGeneration >= d.Generation && d.Status.DesiredNumberScheduled == n &&
			d.Status.NumberAvailable == n && d.Status.UpdatedNumberScheduled == n
	case *daemonsetv1alpha1.DaemonSet:
		return d.Status.ObservedGeneration >= d.Generation && d.Status.DesiredNumberScheduled == n &&
			d.Status.NumberAvailable == n && d.Status.UpdatedNumberScheduled == n
	}
	return false
}

// trial is one measured phase of one implementation.
type trial struct {
	// Bench names the benchmark: convergence or rolling-update.
	Bench    string        `json:"bench"`
	Impl     string        `json:"impl"`
	Nodes    int           `json:"nodes"`
	Rep      int           `json:"rep"`
	Duration time.Duration `json:"duration"`
	// Writes are the controller's write requests during the phase, from the audit log.
	Writes map[string]int `json:"writes"`
	start  time.Time
	end    time.Time
}

// trialShape says what a trial does beyond converging.
type trialShape struct {
	// roll: change the image and time the rolling update, as benchRollingUpdate.
	roll bool
	// inPlace: Keelson's DaemonSet updates in place; its rolling update is timed as benchInPlace or
	// benchInPlaceGated, and its convergence is not reported (with the gate it costs a write more per pod).
	inPlace inPlaceMode
	// convergence is the benchmark the convergence counts in: benchConvergence when empty.
	convergence string
	// converged, if set, runs once the DaemonSet has converged, before anything else (to read memory then).
	converged func() error
}

// daemonSetTrial creates a DaemonSet and times it from create to its status saying n pods available; with roll,
// it then changes the image and times the rolling update the same way. Then it deletes the DaemonSet and waits
// until its pods are gone, so the next trial starts from an empty cluster.
func daemonSetTrial(ctx context.Context, c client.Client, impl, ns string, n, rep int, shape trialShape) ([]trial, error) {
	name := fmt.Sprintf("%s-%d-%d", impl, n, rep)
	switch shape.inPlace {
	case inPlaceNoGate:
		name = fmt.Sprintf("%s-in-place-%d-%d", impl, n, rep)
	case inPlaceGated:
		name = fmt.Sprintf("%s-in-place-gated-%d-%d", impl, n, rep)
	}
	obj := newDaemonSet(impl, ns, name, shape.inPlace)
	wait := func(bench string, start time.Time) (trial, error) {
		t := trial{Bench: bench, Impl: impl, Nodes: n, Rep: rep, start: start}
		err := poll(ctx, 15*time.Minute, func() (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, err
			}
			return converged(obj, int32(n)), nil
		})
		t.end = time.Now()
		t.Duration = t.end.Sub(t.start)
		if err != nil {
			return t, fmt.Errorf("%s %s with %d nodes did not converge: %w", impl, bench, n, err)
		}
		return t, nil
	}
	start := time.Now()
	if err := c.Create(ctx, obj); err != nil {
		return nil, err
	}
	convergence := shape.convergence
	if convergence == "" {
		convergence = benchConvergence
	}
	t, err := wait(convergence, start)
	if err != nil {
		return nil, err
	}
	var out []trial
	if shape.inPlace == recreate {
		out = append(out, t)
	}
	if shape.converged != nil {
		if err := shape.converged(); err != nil {
			return nil, err
		}
	}
	if shape.roll || shape.inPlace != recreate {
		bench := map[inPlaceMode]string{recreate: benchRollingUpdate, inPlaceNoGate: benchInPlace, inPlaceGated: benchInPlaceGated}[shape.inPlace]
		before := obj.DeepCopyObject().(client.Object)
		setImage(obj, benchImageNext)
		start := time.Now()
		if err := c.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			return nil, err
		}
		t, err := wait(bench, start)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, clearTrial(ctx, c, obj, ns, name, n)
}

// clearTimeout is how long clearing a trial of n pods may take, each of its two waits. The apiserver deletes a
// collection one pod at a time: 5000 pods took 84–114 s, and 10,000 pods were not gone after five collection
// deletes of 60 s each, on two cores. A tenth of a second a pod leaves room for that, over the ten minutes the
// garbage collector was always given.
func clearTimeout(n int) time.Duration { return 10*time.Minute + time.Duration(n)*100*time.Millisecond }

// clearTrial deletes a trial's DaemonSet and its n pods, and waits until the garbage collector is done with it.
func clearTrial(ctx context.Context, c client.Client, obj client.Object, ns, name string, n int) error {
	if err := c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	// The garbage collector would delete the pods one request at a time, on its own client budget, and kwok
	// would then finish each graceful deletion: minutes at N = 1000, measuring nothing. One collection delete
	// without grace clears them at once (the DaemonSet is gone, so neither controller recreates them).
	// At thousands of pods the collection delete can outlast the apiserver's request timeout: it deletes what it
	// can, and the next attempt goes on.
	if err := poll(ctx, clearTimeout(n), func() (bool, error) {
		err := c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{"bench": name},
			client.GracePeriodSeconds(0))
		if err != nil {
			fmt.Printf("deleting the pods of %s (will try again): %v\n", name, err)
		}
		return err == nil, nil
	}); err != nil {
		return err
	}
	// The next trial starts once the garbage collector is done with this DaemonSet too: its deletions (of the
	// revisions, and its attempts on the pods) would otherwise run into the next trial and slow it down.
	return poll(ctx, clearTimeout(n), func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"bench": name}); err != nil {
			return false, err
		}
		var revisions appsv1.ControllerRevisionList
		if err := c.List(ctx, &revisions, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, r := range revisions.Items {
			for _, o := range r.OwnerReferences {
				if o.UID == obj.GetUID() {
					return false, nil
				}
			}
		}
		return len(pods.Items) == 0, nil
	})
}

// setImage changes the image of the pod template's container, for either implementation: the change both can
// roll out, one by recreating pods, the other also in place.
func setImage(obj client.Object, image string) {
	switch d := obj.(type) {
	case *appsv1.DaemonSet:
		d.Spec.Template.Spec.Containers[0].Image = image
	case *daemonsetv1alpha1.DaemonSet:
		d.Spec.Template.Spec.Containers[0].Image = image
	}
}

// poll calls cond every 200ms until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return wait.Poll(ctx, 200*time.Millisecond, timeout, cond)
}
