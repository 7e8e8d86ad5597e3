package sizer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/recorder"
)

// maxInfeasibleEvictions bounds the pods a sizer evicts because their resize is infeasible, per generation of the
// sizer and per controller process (a new leader may evict as many again). A replacement starts at the template's size and is
// resized where it lands; when replacements keep landing where the new size cannot fit, the sizer stops evicting and
// falls back to the template, where the scheduler places each new pod at its new size.
const maxInfeasibleEvictions = 3

// evictInfeasible evicts pod, whose resize cannot fit its node (why says so), through the Eviction API, which
// honours every PodDisruptionBudget (the caller has spent the sizer's own budget on it). It reports whether the
// eviction was held back (a budget refused it now).
func (r *Reconciler) evictInfeasible(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, pod *corev1.Pod, why string) (bool, error) {
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	switch err := r.SubResource("eviction").Create(ctx, pod, eviction); {
	case apierrors.IsTooManyRequests(err):
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil // gone or replaced already
	case err != nil:
		return false, fmt.Errorf("evicting pod %s: %w", pod.Name, err)
	}
	r.countEviction(client.ObjectKeyFromObject(wls).String(), wls.Generation)
	recorder.Record(ctx, r.Recorder, recorder.Subject(wls), recorder.Event{Type: corev1.EventTypeNormal,
		Reason: EventInfeasiblePodEvicted, Action: "Evict", Note: why + ": evicted it alone; its replacement is resized where it runs"})
	return false, nil
}

// mayEvict reports whether a sizer at generation may evict n more pods within maxInfeasibleEvictions.
func (r *Reconciler) mayEvict(key string, generation int64, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.evictions[key]
	return e.generation != generation || e.count+n <= maxInfeasibleEvictions
}

// countEviction counts one more infeasible eviction of a sizer at generation.
func (r *Reconciler) countEviction(key string, generation int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.evictions == nil {
		r.evictions = map[string]infeasibleEvictions{}
	}
	e := r.evictions[key]
	if e.generation != generation {
		e = infeasibleEvictions{generation: generation}
	}
	e.count++
	r.evictions[key] = e
}
