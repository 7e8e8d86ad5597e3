package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/managedfields"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// autoscalersOf names the HorizontalPodAutoscalers that scale the Deployment named deployment, sorted by name. Two
// writers of one replica count would undo each other on every pass, so a step with an autoscaler leaves its
// replicas to it (the first); with more than one, Kubernetes scales with none of them (their ScalingActive condition
// says AmbiguousSelector), and the step says so (ReasonAmbiguousAutoscalers).
func autoscalersOf(hpas []autoscalingv2.HorizontalPodAutoscaler, deployment string) []string {
	var found []string
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if t.Kind != "Deployment" || t.Name != deployment || h.DeletionTimestamp != nil {
			continue
		}
		if gv, err := schema.ParseGroupVersion(t.APIVersion); err != nil || (t.APIVersion != "" && gv.Group != appsv1.GroupName) {
			continue
		}
		found = append(found, h.Name)
	}
	sort.Strings(found)
	return found
}

// stepAutoscalers maps each step scaled by HorizontalPodAutoscalers to their names (sorted; the first is the one the
// step leaves its replicas to).
func (r *Reconciler) stepAutoscalers(ctx context.Context, p *inferencev1alpha1.Pipeline) (map[string][]string, error) {
	var list autoscalingv2.HorizontalPodAutoscalerList
	if err := r.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the autoscalers of the namespace: %w", err)
	}
	out := map[string][]string{}
	for i := range p.Spec.Steps {
		name := pipelinespec.StepName(p.Spec.Steps, i)
		if hpas := autoscalersOf(list.Items, pipelinespec.StepObjectName(p, name)); len(hpas) > 0 {
			out[name] = hpas
		}
	}
	return out, nil
}

// firstAutoscalers maps each step to the autoscaler it leaves its replicas to: the first of its autoscalers.
func firstAutoscalers(all map[string][]string) map[string]string {
	out := make(map[string]string, len(all))
	for step, names := range all {
		out[step] = names[0]
	}
	return out
}

// leaveReplicasTo drops the replicas of a step's desired Deployment when an autoscaler scales it, so that they are
// not applied, and gives it the strategy an autoscaled step rolls with (autoscaledStrategy).
func leaveReplicasTo(autoscaler string, s inferencev1alpha1.Step, d *appsv1.Deployment) {
	if autoscaler != "" {
		d.Spec.Replicas = nil
		d.Spec.Strategy = autoscaledStrategy(s)
	}
}

// autoscaledStrategy is the strategy of a step an autoscaler scales. A GPU step on the strategy its defaults give a
// single replica (Recreate) rolls one pod at a time without a surge instead: the autoscaler may run it on many
// replicas, and Recreate would stop all of them on every template change, while maxSurge 0 frees one GPU before it
// asks for one. A Recreate the defaults stored cannot be told from one written by hand, so both are taken as the
// default's; any other strategy is the step's own and stays.
func autoscaledStrategy(s inferencev1alpha1.Step) appsv1.DeploymentStrategy {
	bare := s
	bare.Strategy = ""
	if !pipelinespec.WantsGPU(s) || (s.Strategy != "" && s.Strategy != pipelinespec.StepStrategy(bare)) {
		return DeploymentStrategy(s)
	}
	return noSurgeStrategy()
}

// pipelineOfAutoscaler maps a HorizontalPodAutoscaler to the pipeline whose step Deployment it scales (found in
// the cache, which holds only the pipelines' Deployments), so that a step hands its replicas over as soon as an
// autoscaler appears, and takes them back when it goes.
func (r *Reconciler) pipelineOfAutoscaler(ctx context.Context, obj client.Object) []reconcile.Request {
	hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || hpa.Spec.ScaleTargetRef.Kind != "Deployment" {
		return nil
	}
	var d appsv1.Deployment
	if err := r.Get(ctx, types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Spec.ScaleTargetRef.Name}, &d); err != nil {
		return nil
	}
	if name := d.Labels[inferencev1alpha1.PipelineLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: name}}}
	}
	return nil
}

// handOverReplicas gives up the controller's ownership of a step Deployment's spec.replicas, keeping its value,
// before an apply that leaves replicas out: an apply that merely drops a field its manager alone owns resets it
// (here to 1), which would undo the autoscaler's last decision. The field then belongs to whoever else holds it, or
// to nobody until the autoscaler next writes it. It reads the live object (the cache strips managed fields), and
// checks the apiserver's answer, which keeps the managed fields it had when it cannot decode the ones sent.
func (r *Reconciler) handOverReplicas(ctx context.Context, desired *appsv1.Deployment) error {
	live := &appsv1.Deployment{}
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	entries, held := withoutReplicas(live.ManagedFields)
	if !held {
		return nil
	}
	patch := client.MergeFromWithOptions(live.DeepCopy(), client.MergeFromWithOptimisticLock{})
	live.ManagedFields = entries
	if err := r.Patch(ctx, live, patch); err != nil {
		return fmt.Errorf("handing the replicas of Deployment %s over to its autoscaler: %w", desired.Name, err)
	}
	if _, still := withoutReplicas(live.ManagedFields); still {
		return fmt.Errorf("handing the replicas of Deployment %s over to its autoscaler: %w", desired.Name, errOwnershipKept)
	}
	return nil
}

// errOwnershipKept is an apiserver that answered a hand-over with the controller's ownership of the replicas intact.
var errOwnershipKept = errors.New("the apiserver kept the controller's ownership of spec.replicas")

// handOverFailed is the outcome of a failed hand-over: the step's failure (ReasonHandOverFailed) when the apiserver
// refused it or kept the ownership, which a retry of the same write does not change; else none, and the pass is
// retried (a conflict with another writer, a timeout). The error is returned either way.
func handOverFailed(err error) (*failure, error) {
	if refused(err) || errors.Is(err, errOwnershipKept) {
		return &failure{inferencev1alpha1.ReasonHandOverFailed, err.Error() + "; the step's Deployment is left as it is until the hand-over succeeds"}, err
	}
	return nil, err
}

// withoutReplicas returns entries with spec.replicas taken out of the controller's Apply entry, and whether that
// entry held it.
func withoutReplicas(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	held := false
	for _, e := range entries {
		if !managedfields.AppliedBy(e, FieldOwner) {
			out = append(out, e)
			continue
		}
		trie, _ := managedfields.Decode(e) // nil when undecodable: it holds nothing to take out
		spec := managedfields.Walk(trie, "f:spec")
		if _, has := spec["f:replicas"]; !has {
			out = append(out, e)
			continue
		}
		held = true
		delete(spec, "f:replicas")
		e.FieldsV1 = managedfields.Encode(trie)
		out = append(out, e)
	}
	return out, held
}
