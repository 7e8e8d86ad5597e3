package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/audit"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
	"github.com/keelson-dev/keelson/tools/internal/metrics"
	"github.com/keelson-dev/keelson/tools/internal/workers"
)

// fakeTolerations let a pod onto the simulated nodes.
var fakeTolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}

// parallel runs f(i) for i in [0, n) on 16 workers.
func parallel(n int, f func(i int) error) error { return workers.Run(n, 16, f) }

// countDeployments counts the namespace's Deployments that satisfy ok.
func countDeployments(ctx context.Context, c client.Client, ns string, ok func(*appsv1.Deployment) bool) (int, error) {
	var list appsv1.DeploymentList
	err := c.List(ctx, &list, client.InNamespace(ns))
	return countWhere(list.Items, ok), err
}

// countSizers counts the namespace's WorkloadSizers that satisfy ok.
func countSizers(ctx context.Context, c client.Client, ns string, ok func(*sizerv1alpha1.WorkloadSizer) bool) (int, error) {
	var list sizerv1alpha1.WorkloadSizerList
	err := c.List(ctx, &list, client.InNamespace(ns))
	return countWhere(list.Items, ok), err
}

// countWhere counts the items that satisfy ok.
func countWhere[T any](items []T, ok func(*T) bool) int {
	n := 0
	for i := range items {
		if ok(&items[i]) {
			n++
		}
	}
	return n
}

// benchDeployment is a one-replica Deployment on the simulated nodes.
func benchDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"bench-app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Tolerations: fakeTolerations, NodeSelector: map[string]string{"keelson.dev/fake-node": "true"},
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10.2"}}}}},
	}
}

// sizerResult is the WorkloadSizer benchmark's outcome.
type sizerResult struct {
	Sizers  int           `json:"sizers"`
	ToSized time.Duration `json:"toSized"`
	// Writes are the sizer's writes from the first create until all were Sized; ByKind splits them by verb and
	// resource ("patch deployments"), from the audit log.
	Writes int            `json:"writes"`
	ByKind map[string]int `json:"byKind"`
	// QPS and Burst are the workload-sizer's client budget as deployed: its writes cannot go faster than Burst at
	// once and QPS a second after, so Floor, (Writes - Burst) / QPS, is the least time those writes take.
	QPS        float64       `json:"qps"`
	Burst      float64       `json:"burst"`
	Floor      time.Duration `json:"floor"`
	start, end time.Time
}

// floorRatio is the time to Sized over the write floor: 1 is as fast as the writes the sizers needed allow.
func (r sizerResult) floorRatio() float64 {
	if r.Floor <= 0 {
		return 0
	}
	return r.ToSized.Seconds() / r.Floor.Seconds()
}

// writeFloor is the least time writes take under a client budget of qps a second after a burst.
func writeFloor(writes int, qps, burst float64) time.Duration {
	if qps <= 0 {
		return 0
	}
	return time.Duration(max(0, float64(writes)-burst) / qps * float64(time.Second))
}

// sizerFloorTarget is how far above the write floor the time to Sized may be.
const sizerFloorTarget = 1.1

// sizerBench creates n Deployments, waits until they are available, then n WorkloadSizers over them (size 2,
// resources), and times until every sizer says Sized=True; then it waits until the rollouts they caused are over,
// so that the steady-state window measured later holds no rollout.
func sizerBench(ctx context.Context, c client.Client, ns string, n int) (sizerResult, error) {
	r := sizerResult{Sizers: n}
	if err := parallel(n, func(i int) error {
		return client.IgnoreAlreadyExists(c.Create(ctx, benchDeployment(ns, fmt.Sprintf("app-%d", i))))
	}); err != nil {
		return r, err
	}
	if err := poll(ctx, 10*time.Minute, func() (bool, error) {
		ready, err := countDeployments(ctx, c, ns, func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 1 })
		return ready >= n, err
	}); err != nil {
		return r, fmt.Errorf("the Deployments did not become available: %w", err)
	}
	r.start = time.Now()
	if err := parallel(n, func(i int) error {
		name := fmt.Sprintf("app-%d", i)
		return c.Create(ctx, &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: name},
				Size: ptr.To[int32](2), ForceOwnership: true,
				Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app",
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}}}}})
	}); err != nil {
		return r, err
	}
	if err := poll(ctx, 15*time.Minute, func() (bool, error) {
		sized, err := countSizers(ctx, c, ns, func(w *sizerv1alpha1.WorkloadSizer) bool {
			return meta.IsStatusConditionTrue(w.Status.Conditions, "Sized")
		})
		return sized == n, err
	}); err != nil {
		return r, fmt.Errorf("the sizers did not all become Sized: %w", err)
	}
	r.end = time.Now()
	r.ToSized = r.end.Sub(r.start)
	// Let the rollouts the sizers caused finish before the idle window: those writes are the Deployment
	// controller's and the pods', but the sizer's status follows them.
	if err := poll(ctx, 10*time.Minute, func() (bool, error) {
		settled, err := countDeployments(ctx, c, ns, func(d *appsv1.Deployment) bool {
			return d.Status.UpdatedReplicas == 2 && d.Status.AvailableReplicas == 2 && d.Status.Replicas == 2
		})
		return settled >= n, err
	}); err != nil {
		return r, err
	}
	// And until every sizer's status shows the settled counts: they trail the pods by up to the sizer's pacing
	// interval, and those last writes belong to the rollout, not to the steady state.
	if err := poll(ctx, 5*time.Minute, func() (bool, error) {
		done, err := countSizers(ctx, c, ns, func(w *sizerv1alpha1.WorkloadSizer) bool {
			return w.Status.Replicas == 2 && w.Status.ReadyReplicas == 2 && w.Status.PodCount == 2
		})
		return done >= n, err
	}); err != nil {
		return r, fmt.Errorf("the sizers' status did not settle: %w", err)
	}
	return r, nil
}

// modelsClaim is the claim every benchmark pipeline mounts (kwok never mounts it; it must only exist and be Bound).
func modelsClaim(ctx context.Context, c client.Client, ns string) error {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "keelson-bench-models"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/keelson-bench-models"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "models"}}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, pv)); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "models", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName: ptr.To(""), VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, pvc)); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return false, err
		}
		return pvc.Status.Phase == corev1.ClaimBound, nil
	})
}

// unrelatedPods creates n pods on the simulated nodes that no Keelson controller owns: the filtered caches must
// not hold them.
func unrelatedPods(ctx context.Context, c client.Client, ns string, n, nodes int) error {
	return parallel(n, func(i int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Namespace: ns, Labels: map[string]string{"bench": "unrelated"}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("kwok-node-%d", i%nodes), Tolerations: fakeTolerations,
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10.2"}}}}
		return client.IgnoreAlreadyExists(c.Create(ctx, p))
	})
}

// sizerPoolNodes is the simulated pool the sizer benchmark's pods land on when it runs alone (two pods a
// Deployment, 110 pods a node).
const sizerPoolNodes = 100

// exploreSizers runs the WorkloadSizer benchmark alone with n sizers and prints the time to Sized and the sizer's
// writes by resource and verb up to then, so a change to the sizer can be measured without the whole run.
func exploreSizers(ctx context.Context, c client.Client, scr *metrics.Scraper, clusterTool, clusterDir, auditLog string,
	ns func(string) (string, error), user string, n int, idleFor time.Duration, qps, burst float64) error {
	if err := resizePool(ctx, c, clusterTool, clusterDir, sizerPoolNodes); err != nil {
		return err
	}
	szNS, err := ns("bench-sizer")
	if err != nil {
		return err
	}
	started := time.Now()
	r, err := sizerBench(ctx, c, szNS, n)
	if err != nil {
		return err
	}
	w, err := scr.Idle(ctx, []string{"workload-sizer"}, idleFor)
	if err != nil {
		return err
	}
	events, err := audit.ReadWritesSince(auditLog, started)
	if err != nil {
		return err
	}
	toSized := audit.Count(events, r.start, r.end)
	r.Writes, r.QPS, r.Burst = toSized.Total(user), qps, burst
	r.Floor = writeFloor(r.Writes, qps, burst)
	fmt.Printf("sizer: %d sizers Sized in %.2fs; the sizer's writes until then: %d %v (floor %.2fs at %.0f/s after %.0f: "+
		"%.2f times it); idle: %d writes in %s\n", n, r.ToSized.Seconds(), r.Writes, toSized[user], r.Floor.Seconds(), qps, burst,
		r.floorRatio(), audit.Count(events, w.From, w.To).Total(user), w.To.Sub(w.From))
	return nil
}

// resizePool makes the simulated node pool hold exactly n nodes, all schedulable, and waits until the other
// workloads settled, so that neither implementation meets nodes still joining.
func resizePool(ctx context.Context, c client.Client, tool, dir string, n int) error {
	if err := localcluster.ResizePool(ctx, c, tool, dir, n); err != nil {
		return err
	}
	return othersSettled(ctx, c)
}
