//go:build integration

package pipeline_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/pipeline"
)

// reconciles is how many passes the pipeline controller has run in this process.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == pipeline.ControllerName {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// A node's kubelet writes its status every few seconds (heartbeats, conditions' times, images): a pipeline pinned
// to it reads none of that, so none of it is a pass. What a step does read of its node (its labels, a cordon, its
// allocatable GPUs) still is.
func TestNodeHeartbeatsAreNoPass(t *testing.T) {
	s := newScenario(t)
	startController(t)
	name := s.ns + "-node"
	s.node(name, 0, false)
	p := s.faceDetection(name, name)
	s.bind(p)
	s.rollOut("face-detection-step-0")
	s.rollOut("face-detection-step-1")
	s.g.Eventually(s.phase("face-detection"), timeout, poll).Should(Equal(inferencev1alpha1.PhaseReady))

	// settled is the pass count once it has stood still for a second.
	settled := func() float64 {
		var n float64
		s.g.Eventually(func(g Gomega) {
			n = reconciles(t)
			g.Consistently(func() float64 { return reconciles(t) }, time.Second, 50*time.Millisecond).Should(Equal(n))
		}, timeout, poll).Should(Succeed())
		return n
	}
	before := settled()
	var n corev1.Node
	for beat := range 5 {
		s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
		now := metav1.NewTime(time.Now().Add(time.Duration(beat) * time.Second).Truncate(time.Second))
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: metav1.NewTime(time.Unix(0, 0))}}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"detector:v1"}, SizeBytes: int64(beat + 1)}}
		s.g.Expect(env.Client.Status().Update(s.ctx, &n)).To(Succeed())
	}
	s.g.Consistently(func() float64 { return reconciles(t) }, 2*time.Second, 50*time.Millisecond).Should(Equal(before),
		"a node's heartbeats made passes of the pipeline pinned to it")

	// A change the steps read is a pass: GPUs become allocatable.
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
	n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	s.g.Expect(env.Client.Status().Update(s.ctx, &n)).To(Succeed())
	s.g.Eventually(func() float64 { return reconciles(t) }, timeout, poll).Should(BeNumerically(">", before))
}
