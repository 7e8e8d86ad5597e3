package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// KeptReplicasAnnotation is the annotation of a step's Deployment that holds the replica count an autoscaler left
// when it went, and the pipeline generation it is kept for ("4@7"): the step keeps that count until its pipeline's
// spec changes.
const KeptReplicasAnnotation = "inference.keelson.dev/kept-replicas"

// ReasonAutoscalerRemoved is the event of a step whose autoscaler went and handed its replicas back.
const ReasonAutoscalerRemoved = "AutoscalerRemoved"

// handBack is what a step's replicas become once its autoscaler is gone: kept, the count to keep (nil: the spec's),
// and the annotation that remembers it.
type handBack struct {
	kept       *int32
	annotation string
}

// replicasAfterAutoscaler decides a step's replicas when no autoscaler scales it. A step whose replicas are the
// default (unset, or the 1 that the defaults store and that cannot be told from one written by hand) keeps the
// count its autoscaler left (gone: the autoscaler went in this pass) rather than dropping from many GPU pods to one
// at once; it keeps it, through later passes, until the pipeline's spec changes (generation), when the spec rules
// again: changing the spec is the user deciding. A step with replicas of its own gets them back.
func replicasAfterAutoscaler(s inferencev1alpha1.Step, generation int64, live *appsv1.Deployment, gone bool) handBack {
	if ptr.Deref(s.Replicas, 1) != 1 || live == nil {
		return handBack{}
	}
	if gone {
		if n := ptr.Deref(live.Spec.Replicas, 1); n > 1 {
			return handBack{ptr.To(n), fmt.Sprintf("%d@%d", n, generation)}
		}
		return handBack{}
	}
	v := live.Annotations[KeptReplicasAnnotation]
	count, gen, ok := strings.Cut(v, "@")
	if !ok || gen != strconv.FormatInt(generation, 10) {
		return handBack{}
	}
	n, err := strconv.ParseInt(count, 10, 32)
	if err != nil || n < 1 {
		return handBack{}
	}
	return handBack{ptr.To(int32(n)), v}
}

// keep gives a step's desired Deployment the replicas a hand-back keeps, and the annotation that remembers them.
func (h handBack) keep(d *appsv1.Deployment) {
	if h.kept == nil {
		return
	}
	d.Spec.Replicas = h.kept
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[KeptReplicasAnnotation] = h.annotation
}

// handBackEvent says what a step's replicas became when its autoscaler went: kept, or the spec's.
func handBackEvent(step, autoscaler string, from int32, h handBack, spec int32) event {
	note := fmt.Sprintf("Step %s: HorizontalPodAutoscaler %s is gone; ", step, autoscaler)
	if h.kept != nil {
		note += fmt.Sprintf("keeping its %d replicas until the pipeline's spec changes (set the step's replicas to choose)", *h.kept)
	} else {
		note += fmt.Sprintf("replicas go from %d to %d, as the step's spec says", from, spec)
	}
	return event{corev1.EventTypeNormal, ReasonAutoscalerRemoved, actionReconcile, note, step}
}

// handBacks decides, for each step no autoscaler scales, the replicas a hand-back keeps (replicasAfterAutoscaler),
// and the events of the steps whose autoscaler went since the last status (which names it). It reads the step
// Deployments from the cache, and only those of steps on the default replicas or just handed back.
func (r *Reconciler) handBacks(ctx context.Context, p *inferencev1alpha1.Pipeline, autoscalers map[string]string) (map[string]handBack, []event, error) {
	out := map[string]handBack{}
	var events []event
	for i, s := range p.Spec.Steps {
		name := pipelinespec.StepName(p.Spec.Steps, i)
		if autoscalers[name] != "" {
			continue
		}
		prev, _ := stepOf(p.Status, name)
		gone := prev.Autoscaler != ""
		if ptr.Deref(s.Replicas, 1) != 1 && !gone {
			continue
		}
		var live appsv1.Deployment
		if err := r.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: pipelinespec.StepObjectName(p, name)}, &live); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, nil, fmt.Errorf("reading the Deployment of step %s: %w", name, err)
		}
		h := replicasAfterAutoscaler(s, p.Generation, &live, gone)
		out[name] = h
		if gone {
			events = append(events, handBackEvent(name, prev.Autoscaler, ptr.Deref(live.Spec.Replicas, 1), h, ptr.Deref(s.Replicas, 1)))
		}
	}
	return out, events, nil
}
