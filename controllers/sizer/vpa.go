package sizer

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// verticalAutoscalers is the list kind of the vertical pod autoscaler's objects, an API a cluster may not serve.
var verticalAutoscalers = schema.GroupVersionKind{Group: "autoscaling.k8s.io", Version: "v1", Kind: "VerticalPodAutoscalerList"}

// vpaAbsentFor is how long a cluster found without the vertical pod autoscaler's API is taken to have none: each
// look for it costs a discovery of the apiserver.
const vpaAbsentFor = 5 * time.Minute

// vpaListFor is how long a namespace's list of vertical pod autoscalers serves the passes of its sizers: they are
// not watched, and a pass of each of a thousand sizers must not list them anew.
const vpaListFor = 30 * time.Second

// verticalAutoscalersIn lists a namespace's vertical pod autoscalers, or reuses a list younger than vpaListFor. An
// API the cluster does not serve gives nil and is remembered (vpaAbsentFor).
func (r *Reconciler) verticalAutoscalersIn(ctx context.Context, namespace string, now time.Time) ([]unstructured.Unstructured, error) {
	r.vpa.mu.Lock()
	cached, ok := r.vpa.lists[namespace]
	r.vpa.mu.Unlock()
	if ok && now.Sub(cached.at) < vpaListFor {
		return cached.items, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(verticalAutoscalers)
	if err := r.APIReader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			r.vpa.mu.Lock()
			r.vpa.absent = now
			r.vpa.mu.Unlock()
			return nil, nil
		}
		return nil, fmt.Errorf("listing vertical pod autoscalers: %w", err)
	}
	items := list.Items
	if items == nil {
		items = []unstructured.Unstructured{}
	}
	r.vpa.mu.Lock()
	if r.vpa.lists == nil {
		r.vpa.lists = map[string]vpaList{}
	}
	r.vpa.lists[namespace] = vpaList{at: now, items: items}
	r.vpa.mu.Unlock()
	return items, nil
}

// sizesAny reports whether a VerticalPodAutoscaler sizes one of the containers resources names: its container
// policies (by name, else the "*" default) leave a container to it unless their mode is Off.
func sizesAny(vpa unstructured.Unstructured, resources []sizerv1alpha1.ContainerResources) bool {
	policies, _, _ := unstructured.NestedSlice(vpa.Object, "spec", "resourcePolicy", "containerPolicies")
	modeOf := func(container string) string {
		def := ""
		for _, p := range policies {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			name, _ := m["containerName"].(string)
			mode, _ := m["mode"].(string)
			switch name {
			case container:
				return mode
			case "*":
				def = mode
			}
		}
		return def
	}
	for _, r := range resources {
		if modeOf(r.ContainerName) != "Off" {
			return true
		}
	}
	return false
}

// verticalAutoscalerConflict returns the conflict of a sizer that sets its workload's resources while a
// VerticalPodAutoscaler that updates pods (any updateMode but Off) sizes them too: each would overwrite the other's
// requests, the sizer in the template or by resizing, the autoscaler in every pod it admits or resizes. It is read
// at each of the sizer's passes (the autoscaler's objects are not watched: a cluster may not serve them).
func (r *Reconciler) verticalAutoscalerConflict(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer) (*conflict, error) {
	if len(wls.Spec.Resources) == 0 {
		return nil, nil
	}
	now := r.now()
	r.vpa.mu.Lock()
	absent := !r.vpa.absent.IsZero() && now.Sub(r.vpa.absent) < vpaAbsentFor
	r.vpa.mu.Unlock()
	if absent {
		return nil, nil
	}
	items, err := r.verticalAutoscalersIn(ctx, wls.Namespace, now)
	if err != nil || items == nil {
		return nil, err
	}
	ref := wls.Target()
	for _, v := range items {
		kind, _, _ := unstructured.NestedString(v.Object, "spec", "targetRef", "kind")
		name, _, _ := unstructured.NestedString(v.Object, "spec", "targetRef", "name")
		mode, _, _ := unstructured.NestedString(v.Object, "spec", "updatePolicy", "updateMode")
		if kind != ref.Kind || name != ref.Name || mode == "Off" || !sizesAny(v, wls.Spec.Resources) {
			continue
		}
		if mode == "" {
			mode = "Auto"
		}
		return &conflict{reason: sizerv1alpha1.ReasonVerticalAutoscaler, message: fmt.Sprintf(
			"VerticalPodAutoscaler %s (updateMode %s) sizes the containers of %s %s while spec.resources sizes them "+
				"too: each would overwrite the other's; set the autoscaler's updateMode to Off (recommendations only), "+
				"or remove spec.resources", v.GetName(), mode, ref.Kind, ref.Name)}, nil
	}
	return nil, nil
}
