package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
	"github.com/keelson-dev/keelson/internal/modelfetch"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// The model-cache benchmark: a step whose model (modelCacheSize bytes, from a server in the cluster) is fetched into
// the real node's cache, cold and then from the cache.
const (
	modelCacheNS   = "bench-model-cache"
	modelCacheSize = 200 << 20
	// modelCacheDir is the namespace's cache on the node (the chart's default directory).
	modelCacheDir   = "/var/lib/keelson/models/namespaces/" + modelCacheNS
	modelCacheImage = "localhost/keelson-echo:e2e"
)

// ModelCacheTrial is one pair: the same model fetched cold by a first pipeline, then by a second from the cache.
type ModelCacheTrial struct {
	// Ready is create → the pipeline Ready; Fetch the fetch-model init container's run (started → finished).
	ColdReady, HitReady time.Duration
	ColdFetch, HitFetch time.Duration
	HitReported         bool
}

// ModelCacheResult is the benchmark's run.
type ModelCacheResult struct {
	When time.Time `json:"when"`
	// Commit is the checkout the run was made at (git describe --dirty).
	Commit string            `json:"commit"`
	Size   int64             `json:"size"`
	Node   string            `json:"node"`
	Trials []ModelCacheTrial `json:"trials"`
}

// modelCacheMarkers enclose the benchmark's section of docs/benchmarks.md, which make bench keeps as it is.
var modelCacheMarkers = [2]string{"<!-- model cache: written by make bench-model-cache; do not edit by hand -->", "<!-- model cache: end -->"}

// benchModelCache runs reps trials on the local cluster's real node and, with out set, rewrites its section of
// docs/benchmarks.md and its JSON.
func benchModelCache(ctx context.Context, c client.Client, reps int, out string) error {
	node, err := realNode(ctx, c)
	if err != nil {
		return err
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: modelCacheNS}})); err != nil {
		return err
	}
	defer func() {
		_ = c.Delete(context.WithoutCancel(ctx), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: modelCacheNS}})
		_ = os.RemoveAll(modelCacheDir) // the real node is this host
	}()
	if err := modelServer(ctx, c, node); err != nil {
		return err
	}
	res := ModelCacheResult{When: time.Now().UTC(), Commit: describeMachine().Commit, Size: modelCacheSize, Node: node}
	for rep := range reps {
		uri := fmt.Sprintf("http://model-server.%s.svc:8080/models/bench-%d-%d.bin?size=%d", modelCacheNS, time.Now().Unix(), rep, modelCacheSize)
		var t ModelCacheTrial
		var hit bool
		if t.ColdReady, t.ColdFetch, _, err = timeToReady(ctx, c, fmt.Sprintf("cold-%d", rep), uri, node); err != nil {
			return err
		}
		if t.HitReady, t.HitFetch, hit, err = timeToReady(ctx, c, fmt.Sprintf("hit-%d", rep), uri, node); err != nil {
			return err
		}
		t.HitReported = hit
		fmt.Printf("bench: model cache %d/%d: cold %s to Ready (fetch %s), from the cache %s (fetch %s, hit %v)\n", rep+1, reps,
			t.ColdReady.Round(10*time.Millisecond), t.ColdFetch.Round(10*time.Millisecond), t.HitReady.Round(10*time.Millisecond),
			t.HitFetch.Round(10*time.Millisecond), hit)
		res.Trials = append(res.Trials, t)
	}
	for _, t := range res.Trials {
		if !t.HitReported {
			return fmt.Errorf("a second pipeline with the same model on the same node did not report a cache hit")
		}
	}
	if out == "" {
		fmt.Print(modelCacheSection(res))
		return nil
	}
	if err := writeJSON(filepath.Join(out, "benchmarks", "model-cache.json"), res); err != nil {
		return err
	}
	doc := filepath.Join(out, "benchmarks.md")
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(doc, []byte(withSection(string(old), modelCacheMarkers, modelCacheSection(res))), 0o644)
}

// realNode is the local cluster's node that runs containers (not a simulated one).
func realNode(ctx context.Context, c client.Client) (string, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return "", err
	}
	for _, n := range nodes.Items {
		fake := n.Annotations["kwok.x-k8s.io/node"] != ""
		for k, v := range localcluster.FakeNodeLabels {
			fake = fake || n.Labels[k] == v
		}
		if !fake {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no real node: the benchmark needs the local cluster's node")
}

// modelServer runs the end-to-end server that serves generated models, on the node, and waits for it.
func modelServer(ctx context.Context, c client.Client, node string) error {
	labels := map[string]string{"app": "model-server"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "model-server", Namespace: modelCacheNS},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubernetes.io/hostname": node},
				Containers: []corev1.Container{{Name: "server", Image: modelCacheImage,
					Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "model-server", Namespace: modelCacheNS},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
	for _, o := range []client.Object{d, svc} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			return err
		}
	}
	return wait.Poll(ctx, 200*time.Millisecond, 3*time.Minute, func() (bool, error) {
		var got appsv1.Deployment
		err := c.Get(ctx, client.ObjectKeyFromObject(d), &got)
		return err == nil && got.Status.ReadyReplicas == 1, client.IgnoreNotFound(err)
	})
}

// timeToReady creates a one-step pipeline of the model on the node and returns how long it took to be Ready, how
// long its fetch ran, and whether the fetch was a cache hit.
func timeToReady(ctx context.Context, c client.Client, name, uri, node string) (ready, fetch time.Duration, hit bool, err error) {
	p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: modelCacheNS},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageCache},
			Steps:        []inferencev1alpha1.Step{{Name: "a", Image: modelCacheImage, Location: node, Model: uri}}}}
	start := time.Now()
	if err := c.Create(ctx, p); err != nil {
		return 0, 0, false, err
	}
	if err := wait.Poll(ctx, 100*time.Millisecond, 5*time.Minute, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		return err == nil && p.Status.Phase == inferencev1alpha1.PhaseReady, err
	}); err != nil {
		return 0, 0, false, fmt.Errorf("pipeline %s: %w (status %s)", name, err, statusText(p))
	}
	ready = time.Since(start)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(modelCacheNS), client.MatchingLabels{inferencev1alpha1.PipelineLabel: name}); err != nil {
		return 0, 0, false, err
	}
	for _, pod := range pods.Items {
		for _, cs := range pod.Status.InitContainerStatuses {
			var r modelfetch.Result
			// The fetch's own measure: the container's start and end times have a resolution of a second.
			if t := cs.State.Terminated; cs.Name == pipeline.FetchContainer && t != nil && json.Unmarshal([]byte(t.Message), &r) == nil {
				fetch = time.Duration(r.Seconds * float64(time.Second))
			}
		}
	}
	if len(p.Status.Steps) == 1 && p.Status.Steps[0].Model != nil {
		hit = p.Status.Steps[0].Model.CacheHit
	}
	return ready, fetch, hit, nil
}

// statusText is a pipeline's status as JSON, for an error.
func statusText(p *inferencev1alpha1.Pipeline) string {
	b, _ := json.Marshal(p.Status)
	return string(b)
}

// modelCacheSection is the benchmark's part of docs/benchmarks.md.
func modelCacheSection(r ModelCacheResult) string {
	var coldReady, hitReady, coldFetch, hitFetch []float64
	for _, t := range r.Trials {
		coldReady, hitReady = append(coldReady, t.ColdReady.Seconds()), append(hitReady, t.HitReady.Seconds())
		coldFetch, hitFetch = append(coldFetch, t.ColdFetch.Seconds()), append(hitFetch, t.HitFetch.Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Pipeline model cache (a %d MiB model, storage cache, on the local cluster's real node)\n\n", r.Size>>20)
	commit := r.Commit
	if commit == "" {
		commit = "commit not recorded"
	}
	fmt.Fprintf(&b, "Written by `make bench-model-cache` (%s at %s; pairs: %d): a one-step pipeline whose model, served over HTTP "+
		"from a pod on the node, is fetched cold into the node's cache; then a second pipeline with the same model on the "+
		"same node, whose fetch revalidates it (a conditional request answered 304) and starts from the cache. The server "+
		"is a pod on the same node, so a cold fetch costs the node's disk and hashing, not a network's bandwidth. Times "+
		"are medians; the fetch is the fetch's own measure of its run.\n\n", r.When.Format("2006-01-02"), commit, len(r.Trials))
	b.WriteString("| | create → Ready | fetch |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| cold (downloaded) | %.2f s | %.2f s |\n", median(coldReady), median(coldFetch))
	fmt.Fprintf(&b, "| from the cache | %.2f s | %.2f s |\n\n", median(hitReady), median(hitFetch))
	return b.String()
}

// withSection puts text between the markers in doc, or appends it with the markers.
func withSection(doc string, m [2]string, text string) string {
	block := m[0] + "\n" + text + m[1] + "\n"
	i, j := strings.Index(doc, m[0]), strings.Index(doc, m[1])
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + block
	}
	return doc[:i] + block + strings.TrimPrefix(doc[j+len(m[1]):], "\n")
}

// keptSection is the block between the markers in doc (markers included), or "".
func keptSection(doc string, m [2]string) string {
	i, j := strings.Index(doc, m[0]), strings.Index(doc, m[1])
	if i < 0 || j < i {
		return ""
	}
	return doc[i : j+len(m[1])]
}
