package sizer

import (
	"context"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// firstSizer picks, of the sizers that target one workload, the one that sizes it: the oldest (by creation, then
// by name, so every replica of the controller and every pass agrees). The others report a conflict and write
// nothing, so two sizers never take turns on one workload, even where admission let both in (its webhook down,
// or two creations racing).
func firstSizer(sizers []sizerv1alpha1.WorkloadSizer) *sizerv1alpha1.WorkloadSizer {
	var first *sizerv1alpha1.WorkloadSizer
	for i := range sizers {
		w := &sizers[i]
		if w.DeletionTimestamp != nil {
			continue // going away: it no longer holds the workload
		}
		if first == nil || w.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(w.CreationTimestamp.Equal(&first.CreationTimestamp) && w.Name < first.Name) {
			first = w
		}
	}
	return first
}

// anotherSizer returns the conflict of a sizer whose workload an older sizer already sizes, or nil.
func (r *Reconciler) anotherSizer(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) (*conflict, error) {
	ref := wls.Target()
	var list sizerv1alpha1.WorkloadSizerList
	if err := r.List(ctx, &list, client.InNamespace(wls.Namespace),
		client.MatchingFields{targetIndex: targetKey(ref.Kind, ref.Name)}); err != nil {
		return nil, fmt.Errorf("listing the sizers of %s %s: %w", ref.Kind, ref.Name, err)
	}
	first := firstSizer(list.Items)
	if first == nil || first.UID == wls.UID {
		return nil, nil
	}
	return &conflict{reason: sizerv1alpha1.ReasonAnotherSizer, message: fmt.Sprintf(
		"WorkloadSizer %s already sizes %s %s; this one writes nothing (delete one of them)", first.Name, ref.Kind, ref.Name)}, nil
}

// autoscalersOf returns the names of the HorizontalPodAutoscalers that scale the workload itself (not the sizer:
// an autoscaler on the sizer drives spec.size through the scale subresource, which is the supported way).
func autoscalersOf(hpas []autoscalingv2.HorizontalPodAutoscaler, ref sizerv1alpha1.TargetRef) []string {
	var out []string
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if t.Kind == ref.Kind && t.Name == ref.Name && (t.APIVersion == "" || t.APIVersion == ref.APIVersion) {
			out = append(out, h.Name)
		}
	}
	return out
}

// autoscalersOfSizer returns the names of the HorizontalPodAutoscalers that scale the sizer itself.
func autoscalersOfSizer(hpas []autoscalingv2.HorizontalPodAutoscaler, name string) []string {
	var out []string
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if t.Kind == "WorkloadSizer" && t.Name == name && (t.APIVersion == "" || strings.HasPrefix(t.APIVersion, sizerv1alpha1.GroupVersion.Group+"/")) {
			out = append(out, h.Name)
		}
	}
	return out
}

// autoscalerConflict returns the conflict of a sizer and a HorizontalPodAutoscaler, or nil:
//   - spec.size set on a workload an autoscaler scales: the sizer leaves replicas to the autoscaler (two writers of
//     one number would undo each other forever);
//   - an autoscaler of the sizer while spec.size is unset: the sizer's scale subresource reads 0 replicas, and an
//     autoscaler does not scale from zero, so it does nothing, silently but for this.
func (r *Reconciler) autoscalerConflict(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) (*conflict, error) {
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := r.List(ctx, &list, client.InNamespace(wls.Namespace)); err != nil {
		return nil, fmt.Errorf("listing autoscalers: %w", err)
	}
	ref := wls.Target()
	if wls.Spec.Size == nil {
		names := autoscalersOfSizer(list.Items, wls.Name)
		if len(names) == 0 {
			return nil, nil // the supported setup: an autoscaler of the workload owns replicas, the sizer the rest
		}
		return &conflict{reason: sizerv1alpha1.ReasonAutoscalerWithoutSize, message: fmt.Sprintf(
			"HorizontalPodAutoscaler %s scales this WorkloadSizer, but spec.size is unset: the autoscaler reads 0 "+
				"replicas and scales nothing; set spec.size to the replicas to start from", names[0])}, nil
	}
	names := autoscalersOf(list.Items, ref)
	if len(names) == 0 {
		return nil, nil
	}
	return &conflict{reason: sizerv1alpha1.ReasonAutoscaler, message: fmt.Sprintf(
		"HorizontalPodAutoscaler %s scales %s %s while spec.size is set: the sizer leaves replicas to it; unset "+
			"spec.size, or point the autoscaler at the WorkloadSizer instead", names[0], ref.Kind, ref.Name)}, nil
}
