package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// The two sides of the pipeline comparison.
const (
	sideKeelson = "keelson"
	sideBare    = "bare"
)

const (
	// pipelineSteps is every benchmark pipeline's length.
	pipelineSteps = 5
	// pipelineNodes is how many simulated nodes the steps are spread over (kwok-node-0 …), as a pipeline's steps
	// would be pinned to a few GPU nodes.
	pipelineNodes = 10
	// pairPoll is how often one pair's objects are read: one Get (or one small List) each time, so it can be
	// finer than the cluster-wide polls: a pipeline's overhead is resolved to pairPoll.
	pairPoll = 50 * time.Millisecond
	// hostnameLabel is the node label the pipeline controller pins steps with.
	hostnameLabel = "kubernetes.io/hostname"
)

// pipelinePair is one pipeline and its bare twin: the same Deployments and Services, created directly.
type pipelinePair struct {
	Rep   int `json:"rep"`
	Index int `json:"index"`
	// First is the side created and waited for first.
	First string `json:"first"`
	// Keelson runs from the Pipeline's create request to its status saying Ready for its generation.
	Keelson time.Duration `json:"keelson"`
	// Bare runs from the first create request of the twin's objects to every one of its Deployments available.
	Bare time.Duration `json:"bare"`
	// Overhead is Keelson − Bare: what the whole pipeline adds. Its steps start in parallel, so it is not divided
	// by them (a fifth of one delay per step would read as five small ones).
	Overhead time.Duration `json:"overhead"`
}

// pipelineResult is the pipeline benchmark: every pair, and the summaries over them.
type pipelineResult struct {
	Pipelines int            `json:"pipelines"`
	Reps      int            `json:"reps"`
	Steps     int            `json:"steps"`
	Pairs     []pipelinePair `json:"pairs"`
	Keelson   Summary        `json:"keelson"`
	Bare      Summary        `json:"bare"`
	// Overhead summarizes the pairs' overheads, per pipeline.
	Overhead Summary `json:"overhead"`
	// FirstCounts is how often each side went first.
	FirstCounts map[string]int `json:"firstCounts"`
	start, end  time.Time
}

// pairOrder says which side goes first for the k-th pair of the run: they alternate pair by pair, so over an
// even number of pairs each side goes first equally often and neither always meets a cluster the other warmed.
func pairOrder(k int) []string { return Order(k, []string{sideKeelson, sideBare}) }

// pairNodes are the nodes pair i's steps are pinned to, the same for both sides.
func pairNodes(i, steps int) []string {
	out := make([]string, steps)
	for s := range steps {
		out[s] = fmt.Sprintf("kwok-node-%d", (i*steps+s)%pipelineNodes)
	}
	return out
}

// summarizePairs fills the summaries and the first-side counts from the pairs.
func summarizePairs(r *pipelineResult) {
	var k, b, o []time.Duration
	r.FirstCounts = map[string]int{}
	for _, p := range r.Pairs {
		k, b, o = append(k, p.Keelson), append(b, p.Bare), append(o, p.Overhead)
		r.FirstCounts[p.First]++
	}
	r.Keelson, r.Bare, r.Overhead = Summarize(k), Summarize(b), Summarize(o)
}

// benchPipeline is pipeline name with one step per node, its models on the existing claim.
func benchPipeline(ns, name string, nodes []string) *inferencev1alpha1.Pipeline {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: inferencev1alpha1.PipelineSpec{ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StoragePVC, ClaimName: "models"}}}
	for i, node := range nodes {
		p.Spec.Steps = append(p.Spec.Steps, inferencev1alpha1.Step{Name: fmt.Sprintf("step-%d", i), Image: "registry.k8s.io/pause:3.10.2",
			Location: node, Tolerations: fakeTolerations})
	}
	return p
}

// pipelineReady says whether the pipeline's status reports Ready for its current generation.
func pipelineReady(p *inferencev1alpha1.Pipeline) bool {
	return p.Status.ObservedGeneration >= p.Generation && p.Status.Phase == inferencev1alpha1.PhaseReady
}

// bareDeployment copies a Deployment the pipeline controller made into one the harness owns: the same pod spec
// (image, args, env, probes, volumes, tolerations), pinned to node instead, selected by its own label, and
// carrying none of the controller's labels or owner references, so that no Keelson cache or Service sees it.
func bareDeployment(tpl *appsv1.Deployment, name, node string) *appsv1.Deployment {
	labels := map[string]string{"bench-app": name}
	spec := *tpl.Spec.Template.Spec.DeepCopy()
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			term := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
			for j := range term.MatchExpressions {
				if term.MatchExpressions[j].Key == hostnameLabel {
					term.MatchExpressions[j].Values = []string{node}
				}
			}
		}
	}
	if _, ok := spec.NodeSelector[hostnameLabel]; ok {
		spec.NodeSelector[hostnameLabel] = node
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tpl.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(ptr.Deref(tpl.Spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: tpl.Spec.Strategy, MinReadySeconds: tpl.Spec.MinReadySeconds,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
}

// bareService copies a Service the pipeline controller made, selecting the bare Deployment of the same name.
func bareService(tpl *corev1.Service, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tpl.Namespace},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"bench-app": name}, Ports: tpl.Spec.Ports, Type: tpl.Spec.Type}}
}

// pipelineTwin is what the pipeline controller made for one pipeline, in step order, to be copied.
type pipelineTwin struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
}

// templateTwin creates an unmeasured pipeline, waits until it is Ready, and returns its Deployments and Services
// as the model of every bare twin: the twins then hold exactly what the controller makes, not a guess of it.
func templateTwin(ctx context.Context, c client.Client, ns string) (pipelineTwin, error) {
	var t pipelineTwin
	p := benchPipeline(ns, "pl-template", pairNodes(0, pipelineSteps))
	if err := client.IgnoreAlreadyExists(c.Create(ctx, p)); err != nil {
		return t, err
	}
	if err := poll(ctx, 5*time.Minute, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		return err == nil && pipelineReady(p), err
	}); err != nil {
		return t, fmt.Errorf("the template pipeline did not become Ready: %w", err)
	}
	owned := func(refs []metav1.OwnerReference) bool {
		for _, r := range refs {
			if r.UID == p.UID {
				return true
			}
		}
		return false
	}
	var ds appsv1.DeploymentList
	var ss corev1.ServiceList
	if err := c.List(ctx, &ds, client.InNamespace(ns)); err != nil {
		return t, err
	}
	if err := c.List(ctx, &ss, client.InNamespace(ns)); err != nil {
		return t, err
	}
	for _, d := range ds.Items {
		if owned(d.OwnerReferences) {
			t.deployments = append(t.deployments, d)
		}
	}
	for _, s := range ss.Items {
		if owned(s.OwnerReferences) {
			t.services = append(t.services, s)
		}
	}
	sort.Slice(t.deployments, func(i, j int) bool { return t.deployments[i].Name < t.deployments[j].Name })
	sort.Slice(t.services, func(i, j int) bool { return t.services[i].Name < t.services[j].Name })
	if len(t.deployments) != pipelineSteps {
		return t, fmt.Errorf("the template pipeline owns %d Deployments, want %d", len(t.deployments), pipelineSteps)
	}
	return t, nil
}

// pipelineBench measures reps × n pairs, one pair at a time so that neither side competes with the other, the
// side that goes first alternating pair by pair. Pipelines and twins are left in place: the idle window and the
// memory reading that follow measure the controller while it holds them.
func pipelineBench(ctx context.Context, c client.Client, ns string, n, reps int) (pipelineResult, error) {
	r := pipelineResult{Pipelines: n, Reps: reps, Steps: pipelineSteps}
	twin, err := templateTwin(ctx, c, ns)
	if err != nil {
		return r, err
	}
	r.start = time.Now()
	for rep := range reps {
		for i := range n {
			k := rep*n + i
			nodes := pairNodes(k, pipelineSteps)
			pair := pipelinePair{Rep: rep, Index: i, First: pairOrder(k)[0]}
			for _, side := range pairOrder(k) {
				var d time.Duration
				var err error
				if side == sideKeelson {
					d, err = timePipeline(ctx, c, benchPipeline(ns, fmt.Sprintf("pl-%d-%d", rep, i), nodes))
					pair.Keelson = d
				} else {
					d, err = timeTwin(ctx, c, twin, fmt.Sprintf("bare-%d-%d", rep, i), nodes)
					pair.Bare = d
				}
				if err != nil {
					return r, err
				}
			}
			pair.Overhead = pair.Keelson - pair.Bare
			fmt.Printf("pipeline pair %d/%d (%s first): Ready %.2fs, bare %.2fs, overhead %+.3fs\n", rep, i, pair.First,
				pair.Keelson.Seconds(), pair.Bare.Seconds(), pair.Overhead.Seconds())
			r.Pairs = append(r.Pairs, pair)
		}
	}
	r.end = time.Now()
	summarizePairs(&r)
	return r, nil
}

// timePipeline creates p and returns the time from its create request until its status says Ready.
func timePipeline(ctx context.Context, c client.Client, p *inferencev1alpha1.Pipeline) (time.Duration, error) {
	start := time.Now()
	if err := c.Create(ctx, p); err != nil {
		return 0, err
	}
	if err := wait.Poll(ctx, pairPoll, 5*time.Minute, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		return err == nil && pipelineReady(p), err
	}); err != nil {
		return 0, fmt.Errorf("pipeline %s did not become Ready: %w", p.Name, err)
	}
	return time.Since(start), nil
}

// timeTwin creates the twin's Deployments and Services, all at once as a client applying a manifest in parallel
// would, and returns the time from the first create request until every Deployment is available.
func timeTwin(ctx context.Context, c client.Client, twin pipelineTwin, name string, nodes []string) (time.Duration, error) {
	var objs []client.Object
	var deps []*appsv1.Deployment
	for s := range twin.deployments {
		stepName := fmt.Sprintf("%s-%d", name, s)
		d := bareDeployment(&twin.deployments[s], stepName, nodes[s%len(nodes)])
		deps = append(deps, d)
		objs = append(objs, d)
		if s < len(twin.services) {
			objs = append(objs, bareService(&twin.services[s], stepName))
		}
	}
	start := time.Now()
	if err := parallel(len(objs), func(i int) error { return c.Create(ctx, objs[i]) }); err != nil {
		return 0, err
	}
	if err := wait.Poll(ctx, pairPoll, 5*time.Minute, func() (bool, error) {
		for _, d := range deps {
			if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				return false, err
			}
			if d.Status.ObservedGeneration < d.Generation || d.Status.AvailableReplicas < ptr.Deref(d.Spec.Replicas, 1) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return 0, fmt.Errorf("the bare twin %s did not become available: %w", name, err)
	}
	return time.Since(start), nil
}
