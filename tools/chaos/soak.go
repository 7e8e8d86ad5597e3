package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// SoakResult is the soak's run: mixed churn of all three kinds and of the node pool for a long stretch, with the
// controllers' memory and goroutines sampled throughout and their error logs counted.
type SoakResult struct {
	Nodes    int           `json:"nodes"`
	Duration time.Duration `json:"duration"`
	// Actions counts what the churn did, by kind.
	Actions map[string]int `json:"actions"`
	// Processes are the controllers' pods, each with its memory and goroutines over the run.
	Processes []ProcessSeries `json:"processes"`
	// ErrorLines is each controller's error-level log lines over the run (both replicas); ErrorsPeakMinute the most
	// in any one minute.
	ErrorLines       map[string]int `json:"errorLines"`
	ErrorsPeakMinute map[string]int `json:"errorsPeakMinute"`
	// ControllerRestarts is each controller's container restarts during the run; ScrapesFailed the samples of the
	// controllers' metrics that could not be read (skipped).
	ControllerRestarts map[string]int32 `json:"controllerRestarts"`
	ScrapesFailed      int              `json:"scrapesFailed"`
	// Converged runs from the end of the churn (the pool back to Nodes) until every object converged; Teardown is
	// how long the namespace then took to go, with everything in it. The error logs cover both.
	Converged time.Duration `json:"converged"`
	Teardown  time.Duration `json:"teardown"`
}

// ProcessSeries is one controller pod's resident memory (MiB) and goroutines over the soak: first and last
// samples, mean, and the Theil–Sen slope per hour fitted over the second half of the run (the first half
// fills the caches).
type ProcessSeries struct {
	Controller      string  `json:"controller"`
	Pod             string  `json:"pod"`
	Samples         int     `json:"samples"`
	MemoryFirst     float64 `json:"memoryFirstMiB"`
	MemoryLast      float64 `json:"memoryLastMiB"`
	MemoryMean      float64 `json:"memoryMeanMiB"`
	MemorySlope     float64 `json:"memorySlopeMiBPerHour"`
	GoroutinesFirst float64 `json:"goroutinesFirst"`
	GoroutinesLast  float64 `json:"goroutinesLast"`
	GoroutinesMean  float64 `json:"goroutinesMean"`
	GoroutinesSlope float64 `json:"goroutinesSlopePerHour"`
	// FittedOver is the stretch the slopes were fitted over: the second half of the run.
	FittedOver time.Duration `json:"fittedOver"`
}

// Soak bounds, as absolute slopes: a flat memory series grows by at most maxMemorySlope MiB an hour, a flat goroutine
// count by at most maxGoroutineSlope an hour, whatever the run's length (a bound relative to the window let a
// 28.7 MiB/h leak pass a 30-minute run). The steady controllers' slopes are within ±5 MiB/h and ±5 goroutines/h; a
// 10 MiB/h leak fails. A storm is more than stormLines error lines from one controller in a minute.
const (
	maxMemorySlope    = 6.0  // MiB an hour
	maxGoroutineSlope = 20.0 // goroutines an hour
	stormLines        = 30
	soakSample        = 20 * time.Second
)

// failures says what fails the soak: a series that grows, an error-log storm, a controller that restarted.
func (r SoakResult) failures() []string {
	var out []string
	for _, p := range r.Processes {
		if !p.memoryFlat() {
			out = append(out, fmt.Sprintf("soak: %s's memory grew %.1f MiB an hour, more than %.0f (mean %.1f MiB)", p.Pod,
				p.MemorySlope, maxMemorySlope, p.MemoryMean))
		}
		if !p.goroutinesFlat() {
			out = append(out, fmt.Sprintf("soak: %s's goroutines grew %.0f an hour, more than %.0f (mean %.0f)", p.Pod,
				p.GoroutinesSlope, maxGoroutineSlope, p.GoroutinesMean))
		}
	}
	for _, name := range controllers {
		if n := r.ErrorsPeakMinute[name]; n > stormLines {
			out = append(out, fmt.Sprintf("soak: %s logged %d errors in one minute", name, n))
		}
		if n := r.ControllerRestarts[name]; n > 0 {
			out = append(out, fmt.Sprintf("soak: %s restarted %d times", name, n))
		}
	}
	return out
}

// memoryFlat says whether the pod's memory grew no faster than maxMemorySlope.
func (p ProcessSeries) memoryFlat() bool { return p.MemorySlope <= maxMemorySlope }

// goroutinesFlat says whether the pod's goroutines grew no faster than maxGoroutineSlope.
func (p ProcessSeries) goroutinesFlat() bool { return p.GoroutinesSlope <= maxGoroutineSlope }

// soakChurn is what the churn keeps on the cluster: DaemonSets, WorkloadSizers (each with its Deployment) and
// Pipelines, each kind at a fixed population once it is reached (an object deleted is replaced by a new one, so
// memory that grows is not more objects held), and the node pool between Nodes-20 and Nodes.
type soakChurn struct {
	c       client.Client
	ns      string
	e       *env
	rng     *rand.Rand
	next    int
	rounds  map[string]int
	live    map[string][]string // by kind
	actions map[string]int
}

// soakPopulation is how many objects of each kind the churn keeps.
var soakPopulation = map[string]int{"DaemonSet": 2, "WorkloadSizer": 25, "Pipeline": 6}

// act does one thing to one kind: create, change or delete an object (or resize the pool, for "Node").
func (s *soakChurn) act(ctx context.Context, kind string) error {
	if kind == "Node" {
		n := s.e.plan.Nodes - s.rng.IntN(21)
		s.actions["node pool resized"]++
		return localcluster.ResizePool(ctx, s.c, s.e.clusterTool, s.e.clusterDir, n)
	}
	names := s.live[kind]
	switch {
	case len(names) < soakPopulation[kind]:
		return s.create(ctx, kind)
	case s.rng.IntN(2) == 0:
		// Replaced: one deleted, a new one created.
		i := s.rng.IntN(len(names))
		if err := client.IgnoreNotFound(s.c.Delete(ctx, s.object(kind, names[i]))); err != nil {
			return err
		}
		s.live[kind] = append(names[:i], names[i+1:]...)
		s.actions[kind+" deleted"]++
		return s.create(ctx, kind)
	default:
		name := names[s.rng.IntN(len(names))]
		s.rounds[name]++
		if err := s.change(ctx, kind, name, s.rounds[name]); err != nil {
			return err
		}
		s.actions[kind+" changed"]++
		return nil
	}
}

// create makes a new object of the kind.
func (s *soakChurn) create(ctx context.Context, kind string) error {
	s.next++
	name := fmt.Sprintf("soak-%d", s.next)
	if err := s.c.Create(ctx, s.object(kind, name)); err != nil {
		return err
	}
	s.live[kind] = append(s.live[kind], name)
	s.actions[kind+" created"]++
	return nil
}

// object is a new object of the kind: a DaemonSet on the simulated nodes, a WorkloadSizer creating its
// Deployment, a two-step Pipeline pinned to two of the first fifty simulated nodes (never removed by the churn).
func (s *soakChurn) object(kind, name string) client.Object {
	meta := metav1.ObjectMeta{Name: name, Namespace: s.ns}
	switch kind {
	case "DaemonSet":
		w := &daemonSetWork{c: s.c, ns: s.ns, nodes: s.e.plan.Nodes, name: name}
		return w.object()
	case "WorkloadSizer":
		tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"chaos": name}},
			Spec: corev1.PodSpec{NodeSelector: fakeNodeSelector, Tolerations: []corev1.Toleration{fakeNodeToleration},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10.2"}}}}
		return &sizerv1alpha1.WorkloadSizer{ObjectMeta: meta, Spec: sizerv1alpha1.WorkloadSizerSpec{
			TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: name}, Template: tmpl, Size: ptr.To[int32](2),
			Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app",
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}}
	default:
		i := s.next
		step := func(stepName string, n int) inferencev1alpha1.Step {
			return inferencev1alpha1.Step{Name: stepName, Image: "registry.k8s.io/pause:3.10.2", Model: "models/" + stepName,
				Location: s.e.nodeNames[(2*i+n)%min(50, len(s.e.nodeNames)-20)], Tolerations: []corev1.Toleration{fakeNodeToleration},
				Args: map[string]string{"round": "0"}}
		}
		return &inferencev1alpha1.Pipeline{ObjectMeta: meta, Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs.chaos.invalid", "share": "/models"}},
			Steps: []inferencev1alpha1.Step{step("detect", 0), step("recognize", 1)}}}
	}
}

// change gives one object new work: a DaemonSet rolls, a sizer takes a new size (1 to 5), a Pipeline rolls its
// steps.
func (s *soakChurn) change(ctx context.Context, kind, name string, round int) error {
	switch kind {
	case "DaemonSet":
		w := &daemonSetWork{c: s.c, ns: s.ns, name: name}
		return w.change(ctx, round)
	case "WorkloadSizer":
		var wls sizerv1alpha1.WorkloadSizer
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &wls); err != nil {
			return err
		}
		base := wls.DeepCopy()
		wls.Spec.Size = ptr.To(int32(1 + s.rng.IntN(5)))
		return s.c.Patch(ctx, &wls, client.MergeFrom(base))
	default:
		var p inferencev1alpha1.Pipeline
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &p); err != nil {
			return err
		}
		base := p.DeepCopy()
		for i := range p.Spec.Steps {
			p.Spec.Steps[i].Args = map[string]string{"round": strconv.Itoa(round)}
		}
		return s.c.Patch(ctx, &p, client.MergeFrom(base))
	}
}

// converged reports whether every object the churn left converged: each DaemonSet on the whole pool, each sizer
// Ready with its Deployment at its size, each Pipeline Ready, for their current generations.
func (s *soakChurn) converged(ctx context.Context) (bool, error) {
	for _, name := range s.live["DaemonSet"] {
		w := &daemonSetWork{c: s.c, ns: s.ns, nodes: s.e.plan.Nodes, name: name}
		if ok, err := w.converged(ctx); !ok || err != nil {
			return false, err
		}
	}
	var sizers sizerv1alpha1.WorkloadSizerList
	if err := s.c.List(ctx, &sizers, client.InNamespace(s.ns)); err != nil {
		return false, err
	}
	for _, wls := range sizers.Items {
		if wls.Status.ObservedGeneration < wls.Generation || !conditionTrue(wls.Status.Conditions, "Ready") {
			return false, nil
		}
		var d appsv1.Deployment
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: wls.Name}, &d); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if ptr.Deref(d.Spec.Replicas, 1) != ptr.Deref(wls.Spec.Size, 1) || d.Status.ReadyReplicas != ptr.Deref(wls.Spec.Size, 1) {
			return false, nil
		}
	}
	var pipelines inferencev1alpha1.PipelineList
	if err := s.c.List(ctx, &pipelines, client.InNamespace(s.ns)); err != nil {
		return false, err
	}
	for _, p := range pipelines.Items {
		if p.Status.ObservedGeneration < p.Generation || !conditionTrue(p.Status.Conditions, "Ready") {
			return false, nil
		}
	}
	return len(sizers.Items) == len(s.live["WorkloadSizer"]) && len(pipelines.Items) == len(s.live["Pipeline"]), nil
}

// soak is the scenario: churn for SoakFor (a DaemonSet action every 30 s, a sizer action every 2 s, a Pipeline
// action every 5 s, a pool resize every minute), the controllers' processes sampled every soakSample; then the
// pool restored and everything converged, the namespace deleted, and the controllers' logs read.
func soak(ctx context.Context, e *env, ns string, scr *metrics.Scraper) (SoakResult, error) {
	r := SoakResult{Nodes: e.plan.Nodes, Duration: e.plan.SoakFor}
	s := &soakChurn{c: e.c, ns: ns, e: e, rng: e.rng, rounds: map[string]int{}, live: map[string][]string{},
		actions: map[string]int{}}
	restartsBefore, err := controllerRestarts(ctx, e.c, e.injectors())
	if err != nil {
		return r, err
	}
	began := time.Now()
	every := map[string]time.Duration{"DaemonSet": 30 * time.Second, "WorkloadSizer": 2 * time.Second,
		"Pipeline": 5 * time.Second, "Node": time.Minute}
	due := map[string]time.Time{}
	for k := range every {
		due[k] = began
	}
	// The processes are sampled on their own clock: a churn action that waits (a pool resize) delays no sample.
	ps := &processSampler{scr: scr, began: began, samples: map[string][]processSample{}}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); ps.run(sctx) }()
	defer func() { stopSampling(); <-sampled }()
	for time.Since(began) < e.plan.SoakFor {
		now := time.Now()
		for _, kind := range []string{"Node", "DaemonSet", "Pipeline", "WorkloadSizer"} {
			if !now.Before(due[kind]) {
				if err := s.act(ctx, kind); err != nil {
					return r, fmt.Errorf("churn (%s): %w", kind, err)
				}
				due[kind] = due[kind].Add(every[kind])
			}
		}
		if err := sleepUntil(ctx, time.Now().Add(200*time.Millisecond)); err != nil {
			return r, err
		}
	}
	stopSampling()
	<-sampled
	r.ScrapesFailed = ps.failed
	if ps.failed*10 > ps.attempts {
		return r, fmt.Errorf("%d of %d scrapes of the controllers' metrics failed (last: %w)", ps.failed, ps.attempts, ps.err)
	}
	if err := localcluster.ResizePool(ctx, e.c, e.clusterTool, e.clusterDir, e.plan.Nodes); err != nil {
		return r, err
	}
	stopped := time.Now()
	if err := pollUntil(ctx, 15*time.Minute, func() (bool, error) { return s.converged(ctx) }); err != nil {
		return r, fmt.Errorf("no convergence after the churn: %w", err)
	}
	r.Converged = time.Since(stopped)
	r.Actions = s.actions
	r.Processes = seriesOf(ps.samples, e.plan.SoakFor)
	restartsAfter, err := controllerRestarts(ctx, e.c, e.injectors())
	if err != nil {
		return r, err
	}
	r.ControllerRestarts = map[string]int32{}
	for name, n := range restartsAfter {
		r.ControllerRestarts[name] = n - restartsBefore[name]
	}
	// The namespace goes, with everything in it: a controller that keeps creating into a namespace being deleted
	// logs its refusals, so the logs are read once it is gone.
	deleting := time.Now()
	if err := e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return r, err
	}
	if err := pollUntil(ctx, 10*time.Minute, func() (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return r, fmt.Errorf("deleting the namespace: %w", err)
	}
	r.Teardown = time.Since(deleting)
	r.ErrorLines, r.ErrorsPeakMinute, err = errorLogs(ctx, e, began)
	return r, err
}

// processSample is one scrape of one controller pod.
type processSample struct {
	controller string
	at         time.Duration
	memoryMiB  float64
	goroutines float64
}

// processSampler scrapes every controller pod's memory and goroutines every soakSample. A failed scrape (a pod
// restarting, a slow answer) is counted and skipped, not the end of the run: the restart is what the soak reports.
type processSampler struct {
	scr     *metrics.Scraper
	began   time.Time
	samples map[string][]processSample // by pod
	// attempts and failed count the scrapes; err is the last failure.
	attempts, failed int
	err              error
}

// run samples until ctx ends.
func (p *processSampler) run(ctx context.Context) {
	t := time.NewTicker(soakSample)
	defer t.Stop()
	for {
		p.attempts++
		if err := p.sample(ctx); err != nil && ctx.Err() == nil {
			p.failed, p.err = p.failed+1, err
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample scrapes every controller pod once; all or nothing, so no pod's series gets a sample the others lack.
func (p *processSampler) sample(ctx context.Context) error {
	at := time.Since(p.began)
	got := map[string]processSample{}
	for _, name := range controllers {
		texts, err := p.scr.Scrape(ctx, name)
		if err != nil {
			return err
		}
		for _, t := range texts {
			mem, ok := metrics.Value(t.Text, metrics.ResidentMemory)
			g, ok2 := metrics.Value(t.Text, metrics.Goroutines)
			if !ok || !ok2 {
				return fmt.Errorf("%s exposes no %s or %s", t.Pod.Name, metrics.ResidentMemory, metrics.Goroutines)
			}
			got[t.Pod.Name] = processSample{controller: name, at: at, memoryMiB: mem / (1 << 20), goroutines: g}
		}
	}
	for pod, s := range got {
		p.samples[pod] = append(p.samples[pod], s)
	}
	return nil
}

// seriesOf summarizes each pod's samples, slopes fitted over the second half of a run of length d.
func seriesOf(samples map[string][]processSample, d time.Duration) []ProcessSeries {
	var out []ProcessSeries
	for pod, ss := range samples {
		p := ProcessSeries{Controller: ss[0].controller, Pod: pod, Samples: len(ss), MemoryFirst: ss[0].memoryMiB,
			MemoryLast: ss[len(ss)-1].memoryMiB, GoroutinesFirst: ss[0].goroutines, GoroutinesLast: ss[len(ss)-1].goroutines}
		var xs, mem, gs []float64
		for _, s := range ss {
			p.MemoryMean += s.memoryMiB / float64(len(ss))
			p.GoroutinesMean += s.goroutines / float64(len(ss))
			if s.at >= d/2 {
				xs, mem, gs = append(xs, s.at.Hours()), append(mem, s.memoryMiB), append(gs, s.goroutines)
			}
		}
		if len(xs) >= 2 {
			p.FittedOver = time.Duration((xs[len(xs)-1] - xs[0]) * float64(time.Hour))
			p.MemorySlope, p.GoroutinesSlope = slope(xs, mem), slope(xs, gs)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// errorLogs counts each controller's error-level log lines since since, in total and in its busiest minute.
func errorLogs(ctx context.Context, e *env, since time.Time) (total, peak map[string]int, err error) {
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return nil, nil, err
	}
	total, peak = map[string]int{}, map[string]int{}
	for _, name := range controllers {
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(e.releaseNS), client.MatchingLabels{
			"app.kubernetes.io/name": name, "app.kubernetes.io/instance": e.release}); err != nil {
			return nil, nil, err
		}
		perMinute := map[int64]int{}
		for _, p := range pods.Items {
			logs := []bool{false}
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount > 0 {
					logs = append(logs, true) // the container that died: its last lines say why
					break
				}
			}
			for _, previous := range logs {
				n, err := countErrorLines(ctx, cs, e.releaseNS, p.Name, since, previous, perMinute)
				if err != nil && !previous {
					return nil, nil, err
				}
				total[name] += n
			}
		}
		for _, n := range perMinute {
			peak[name] = max(peak[name], n)
		}
	}
	return total, peak, nil
}

// slope is the Theil–Sen slope of ys over xs: the median of the slopes between every two samples. Unlike a
// least-squares fit, one sample far off the trend near the end of the window (a burst of goroutines waiting on the
// client budget, a collection not yet run) barely moves it, while a steady leak moves every pair.
func slope(xs, ys []float64) float64 {
	var slopes []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	sort.Float64s(slopes)
	return stat.Quantile(0.5, stat.Empirical, slopes, nil)
}

// countErrorLines counts the error-level lines of one pod's log since a time (its previous container's, when
// previous), adding them to perMinute. A log without any JSON level is an error: the count would read 0 whatever
// happened (the chart's logFormat must be json).
func countErrorLines(ctx context.Context, cs kubernetes.Interface, ns, pod string, since time.Time, previous bool,
	perMinute map[int64]int) (int, error) {
	t := metav1.NewTime(since)
	stream, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{SinceTime: &t, Timestamps: true, Previous: previous}).Stream(ctx)
	if err != nil {
		return 0, fmt.Errorf("logs of %s: %w", pod, err)
	}
	defer func() { _ = stream.Close() }()
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n, lines, levelled := 0, 0, 0
	for sc.Scan() {
		stamp, line, _ := strings.Cut(sc.Text(), " ")
		lines++
		if strings.Contains(line, `"level":`) {
			levelled++
		}
		if !strings.Contains(line, `"level":"error"`) {
			continue
		}
		n++
		if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			perMinute[at.Unix()/60]++
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("logs of %s: %w", pod, err)
	}
	if lines > 0 && levelled == 0 {
		return n, fmt.Errorf("the logs of %s are not JSON: no error could be counted", pod)
	}
	return n, nil
}
