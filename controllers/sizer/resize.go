package sizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// specHashAnnotation records, on a child whose spec is awkward to compare field by field, the hash of what the
// sizer last applied, so a steady state applies nothing.
const specHashAnnotation = "sizer.keelson.dev/spec-hash"

func ingressHash(wls *sizerv1alpha1.WorkloadSizer) string {
	b, _ := json.Marshal(struct {
		Ingress *sizerv1alpha1.IngressExpose
		Port    int32
	}{wls.Spec.Expose.Ingress, wls.Spec.Expose.Service.Port})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// resizePods resizes the target's running pods in place, through the pods' resize subresource, to the applied
// resources. It reports whether resizes are still under way, and whether one is infeasible (the apiserver refuses
// it, or the kubelet reports it cannot be done), in which case the caller falls back to a rolling update.
func (r *Reconciler) resizePods(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target,
	applied []sizerv1alpha1.AppliedResources) (pending, infeasible bool, err error) {
	sel, err := metav1.LabelSelectorAsSelector(t.selector)
	if err != nil {
		return false, false, err
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(wls.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, false, fmt.Errorf("listing pods to resize: %w", err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range pod.Status.Conditions {
			switch {
			case c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible:
				infeasible = true
			case c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress:
				pending = true
			}
		}
		changed := false
		for ci := range pod.Spec.Containers {
			c := &pod.Spec.Containers[ci]
			for _, a := range applied {
				if a.ContainerName != c.Name || resourcesEqual(*c, a) {
					continue
				}
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				for k, v := range a.Requests {
					c.Resources.Requests[k] = v
				}
				if a.Limits != nil {
					if c.Resources.Limits == nil {
						c.Resources.Limits = corev1.ResourceList{}
					}
					for k, v := range a.Limits {
						c.Resources.Limits[k] = v
					}
				}
				changed = true
			}
		}
		if !changed {
			continue
		}
		pending = true
		if err := r.SubResource("resize").Update(ctx, pod); err != nil {
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
				infeasible = true // e.g. a QoS class change, or a resource that cannot change in place
				continue
			}
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // the pod changed or went; the next pass sees it
			}
			return pending, infeasible, fmt.Errorf("resizing pod %s: %w", pod.Name, err)
		}
	}
	return pending, infeasible, nil
}
