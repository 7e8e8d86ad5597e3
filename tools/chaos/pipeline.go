package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// pipelineWork is a set of two-step Pipelines on NFS storage, their steps pinned to simulated nodes, whose steps
// change every round: no step Deployment, Service or PersistentVolume may be deleted or duplicated meanwhile (each
// keeps the UID it had once created), and no step Deployment's template may go back to an earlier round's (a leader
// that froze and woke writing the template it had built before would; a round is asked while the leader is frozen,
// so that what it had built is stale when it wakes), whatever happens to the controller; the round's change must
// reach every step Deployment.
type pipelineWork struct {
	c     client.Client
	ns    string
	count int
	nodes []string
	// cs, when set, makes the rounds' invariant a watch of the step Deployments, judged on every event once set up;
	// without it they are read from a list. Children's UIDs are listed either way.
	cs kubernetes.Interface
	watchedDeployments
	// uids are the children's UIDs, by kind and name, as first seen after setup.
	uids map[string]types.UID
	// round is the round of the last change; seen the latest round each step Deployment was seen at, under mu (the
	// watch and the sampler judge).
	round atomic.Int32
	mu    sync.Mutex
	seen  map[string]int
}

func (w *pipelineWork) name(i int) string { return fmt.Sprintf("chaos-%d", i) }

func (w *pipelineWork) setUp(ctx context.Context) error {
	for i := range w.count {
		step := func(name string, n int) inferencev1alpha1.Step {
			return inferencev1alpha1.Step{Name: name, Image: "registry.k8s.io/pause:3.10.2", Model: "models/" + name,
				Location: w.nodes[(2*i+n)%len(w.nodes)], Tolerations: []corev1.Toleration{fakeNodeToleration},
				Args: map[string]string{"round": "0"}}
		}
		p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: w.name(i), Namespace: w.ns},
			Spec: inferencev1alpha1.PipelineSpec{
				ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
					CSIParameter: map[string]string{"server": "nfs.chaos.invalid", "share": "/models"}},
				Steps: []inferencev1alpha1.Step{step("detect", 0), step("recognize", 1)}}}
		if err := w.c.Create(ctx, p); err != nil {
			return err
		}
	}
	if err := pollUntil(ctx, 0, func() (bool, error) { return w.converged(ctx) }); err != nil {
		return err
	}
	children, err := w.children(ctx)
	if err != nil {
		return err
	}
	w.uids = children
	if w.cs != nil {
		w.watch, err = newDeploymentWatch(ctx, w.cs, w.ns, w.judgeDeployment)
	}
	return err
}

// judgeDeployment says what is wrong with one step Deployment as it stands: a template gone back to an earlier
// round's than it was seen at.
func (w *pipelineWork) judgeDeployment(d *appsv1.Deployment) []string {
	if _, ok := d.Labels[inferencev1alpha1.PipelineLabel]; !ok {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]int{}
	}
	r := roundOf(d)
	seen := w.seen[d.Name]
	w.seen[d.Name] = max(seen, r)
	if r < seen {
		return []string{fmt.Sprintf("Deployment %s went back from round %d to round %d: a stale write", d.Name, seen, r)}
	}
	return nil
}

// change moves every step to the round's arguments: a rollout of every step Deployment.
func (w *pipelineWork) change(ctx context.Context, round int) error {
	w.round.Store(int32(round))
	for i := range w.count {
		var p inferencev1alpha1.Pipeline
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: w.name(i)}, &p); err != nil {
			return err
		}
		base := p.DeepCopy()
		for s := range p.Spec.Steps {
			p.Spec.Steps[s].Args = map[string]string{"round": strconv.Itoa(round)}
		}
		if err := w.c.Patch(ctx, &p, client.MergeFrom(base)); err != nil {
			return err
		}
	}
	return nil
}

// children maps "Kind name" to the UID of every step Deployment and Service and every volume of the pipelines.
func (w *pipelineWork) children(ctx context.Context) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(w.ns), client.HasLabels{inferencev1alpha1.PipelineLabel}); err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		out["Deployment "+d.Name] = d.UID
	}
	var svcs corev1.ServiceList
	if err := w.c.List(ctx, &svcs, client.InNamespace(w.ns), client.HasLabels{inferencev1alpha1.PipelineLabel}); err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		out["Service "+s.Name] = s.UID
	}
	var pvs corev1.PersistentVolumeList
	if err := w.c.List(ctx, &pvs, client.MatchingLabels{pipeline.NamespaceLabel: w.ns}); err != nil {
		return nil, err
	}
	for _, pv := range pvs.Items {
		out["PersistentVolume "+pv.Name] = pv.UID
	}
	return out, nil
}

// check finds children that went, came back under another UID, or appeared beside the ones set up.
func (w *pipelineWork) check(ctx context.Context) ([]string, error) {
	if w.uids == nil {
		return nil, nil
	}
	now, err := w.children(ctx)
	if err != nil {
		return nil, err
	}
	var bad []string
	if w.watch != nil {
		bad = w.watch.take()
	} else {
		var deps appsv1.DeploymentList
		if err := w.c.List(ctx, &deps, client.InNamespace(w.ns), client.HasLabels{inferencev1alpha1.PipelineLabel}); err != nil {
			return nil, err
		}
		for i := range deps.Items {
			bad = append(bad, w.judgeDeployment(&deps.Items[i])...)
		}
	}
	var listed []string
	for key, uid := range w.uids {
		switch got, ok := now[key]; {
		case !ok:
			listed = append(listed, key+" is gone")
		case got != uid:
			listed = append(listed, key+" was deleted and created again")
		}
	}
	for key := range now {
		if _, ok := w.uids[key]; !ok {
			listed = append(listed, key+" appeared")
		}
	}
	if len(listed) > 0 {
		w.listViolations.Add(1)
	}
	bad = append(bad, listed...)
	sort.Strings(bad)
	return bad, nil
}

// converged: every pipeline observed its generation, and each step Deployment runs the round's template.
func (w *pipelineWork) converged(ctx context.Context) (bool, error) {
	var list inferencev1alpha1.PipelineList
	if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
		return false, err
	}
	if len(list.Items) != w.count {
		return false, nil
	}
	for _, p := range list.Items {
		if p.Status.ObservedGeneration < p.Generation || len(p.Status.Steps) != len(p.Spec.Steps) {
			return false, nil
		}
	}
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(w.ns), client.HasLabels{inferencev1alpha1.PipelineLabel}); err != nil {
		return false, err
	}
	if len(deps.Items) != 2*w.count {
		return false, nil
	}
	for _, d := range deps.Items {
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 ||
			d.Status.Replicas != 1 || roundOf(&d) != int(w.round.Load()) {
			return false, nil
		}
	}
	return true, nil
}

// stepRounds reads the round each step Deployment's template was written for.
func (w *pipelineWork) stepRounds(ctx context.Context) (map[string]int, error) {
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(w.ns), client.HasLabels{inferencev1alpha1.PipelineLabel}); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for i := range deps.Items {
		out[deps.Items[i].Name] = roundOf(&deps.Items[i])
	}
	return out, nil
}

// roundOf is the round a step Deployment's server was given (its --round argument), -1 when it has none.
func roundOf(d *appsv1.Deployment) int {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--round="); ok {
				if n, err := strconv.Atoi(v); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// left counts the step Deployments whose template is not yet the round's.
func (w *pipelineWork) left(ctx context.Context) (int, int, error) {
	rounds, err := w.stepRounds(ctx)
	if err != nil {
		return 0, 0, err
	}
	n := 2*w.count - len(rounds) // a step Deployment not there yet is work left too
	for _, r := range rounds {
		if r != int(w.round.Load()) {
			n++
		}
	}
	return max(n, 0), 2 * w.count, nil
}

// maxHold: a round's templates are written within a second.
func (w *pipelineWork) maxHold() time.Duration { return time.Second }
