package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// sample is the face-detection sample pipeline: two steps, NFS through CSI.
func sample() *inferencev1alpha1.Pipeline {
	return &inferencev1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Name: "face-detection", Namespace: "vision", UID: "0123456789abcdef"},
		Spec: inferencev1alpha1.PipelineSpec{
			ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageNFS,
				CSIParameter: map[string]string{"server": "nfs.example.internal", "share": "/exports/models"}},
			Steps: []inferencev1alpha1.Step{
				{Image: "detector:v1", Location: "node-1", Model: "face/detect", Args: map[string]string{"listenPort": "9080", "threshold": "0.6"}},
				{Image: "recognizer:v1", Location: "node-2", Model: "face/recognize", Args: map[string]string{"listenPort": "9081"}},
			},
		},
	}
}

func TestDesiredStorage(t *testing.T) {
	p := sample()
	pv := DesiredPV(p)
	if pv.Name != "vision-face-detection-models-01234567" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		pv.Spec.StorageClassName != "" || pv.Spec.AccessModes[0] != corev1.ReadOnlyMany {
		t.Fatalf("PV: %+v", pv)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "nfs.csi.k8s.io" || !pv.Spec.CSI.ReadOnly ||
		pv.Spec.CSI.VolumeAttributes["server"] != "nfs.example.internal" || !strings.Contains(pv.Spec.CSI.VolumeHandle, pv.Name) {
		t.Fatalf("PV CSI source: %+v", pv.Spec.CSI)
	}
	if pv.Spec.ClaimRef.Name != "face-detection-models" || pv.Spec.ClaimRef.Namespace != "vision" {
		t.Fatalf("PV is not pre-bound to the claim: %+v", pv.Spec.ClaimRef)
	}
	if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("10Gi")) != 0 {
		t.Fatalf("default capacity %s", q.String())
	}
	pvc := DesiredPVC(p)
	if pvc.Spec.VolumeName != pv.Name || *pvc.Spec.StorageClassName != "" || pvc.Spec.AccessModes[0] != corev1.ReadOnlyMany {
		t.Fatalf("PVC is not pre-bound both ways: %+v", pvc.Spec)
	}
	p.Spec.ModelStorage.CSI = ptr.To(false)
	if pv := DesiredPV(p); pv.Spec.CSI != nil || pv.Spec.NFS == nil || pv.Spec.NFS.Path != "/exports/models" {
		t.Fatalf("csi: false must give an in-tree nfs volume: %+v", pv.Spec.PersistentVolumeSource)
	}
}

func TestDesiredStep(t *testing.T) {
	p := sample()
	w, _ := pipelinespec.Wire(p.Spec.Steps)
	d := DesiredDeployment(p, 0, w, ModelFetch{})
	if d.Name != "face-detection-step-0" || d.Labels["pipeline"] != "face-detection" || d.Labels["step"] != "step-0" {
		t.Fatalf("sample names and labels: %s %v", d.Name, d.Labels)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff([]string{"--listenPort=9080", "--threshold=0.6"}, c.Args); diff != "" {
		t.Fatalf("args (-want +got):\n%s", diff)
	}
	if c.Ports[0].ContainerPort != 9080 || c.ReadinessProbe.TCPSocket.Port.IntValue() != 9080 {
		t.Fatalf("listenPort sets the port and the default probe: %+v %+v", c.Ports, c.ReadinessProbe)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if diff := cmp.Diff(map[string]string{"PIPELINE_NAME": "face-detection", "STEP_NAME": "step-0", "MODEL_PATH": "/models",
		"NEXT_STEP_URL": "http://face-detection-step-1.vision.svc:9081"}, env); diff != "" {
		t.Fatalf("env (-want +got):\n%s", diff)
	}
	if m := c.VolumeMounts[0]; m.SubPath != "face/detect" || !m.ReadOnly || m.MountPath != "/models" {
		t.Fatalf("model mount: %+v", m)
	}
	if d.Spec.Template.Spec.NodeName != "" {
		t.Fatal("spec.nodeName bypasses the scheduler")
	}
	term := d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if term.MatchExpressions[0].Key != "kubernetes.io/hostname" || term.MatchExpressions[0].Values[0] != "node-1" {
		t.Fatalf("node pinning: %+v", term)
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("strategy %s", d.Spec.Strategy.Type)
	}
	if d.Spec.Template.Spec.Tolerations != nil {
		t.Fatalf("tolerations nobody asked for: %v", d.Spec.Template.Spec.Tolerations)
	}
	gpuTaint := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	p.Spec.Steps[0].Tolerations = gpuTaint
	if got := DesiredDeployment(p, 0, w, ModelFetch{}).Spec.Template.Spec.Tolerations; !cmp.Equal(gpuTaint, got) {
		t.Fatalf("a step's tolerations reach its pods: %v", got)
	}
	last := DesiredDeployment(p, 1, w, ModelFetch{})
	for _, e := range last.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "NEXT_STEP") {
			t.Fatalf("the last step has no next step: %v", e)
		}
	}
	svc := DesiredService(p, 1)
	if svc.Name != "face-detection-step-1" || svc.Spec.Ports[0].Port != 9081 || svc.Spec.Selector[inferencev1alpha1.StepLabel] != "step-1" {
		t.Fatalf("service: %+v", svc)
	}
}

func TestStepStrategyAndFanOutEnv(t *testing.T) {
	gpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	for name, tc := range map[string]struct {
		step inferencev1alpha1.Step
		want appsv1.DeploymentStrategyType
	}{
		"cpu step":          {inferencev1alpha1.Step{}, appsv1.RollingUpdateDeploymentStrategyType},
		"one GPU replica":   {inferencev1alpha1.Step{Resources: gpu}, appsv1.RecreateDeploymentStrategyType},
		"two GPU replicas":  {inferencev1alpha1.Step{Resources: gpu, Replicas: ptr.To[int32](2)}, appsv1.RollingUpdateDeploymentStrategyType},
		"explicit wins":     {inferencev1alpha1.Step{Resources: gpu, Strategy: appsv1.RollingUpdateDeploymentStrategyType}, appsv1.RollingUpdateDeploymentStrategyType},
		"explicit Recreate": {inferencev1alpha1.Step{Strategy: appsv1.RecreateDeploymentStrategyType}, appsv1.RecreateDeploymentStrategyType},
		"one MIG slice": {inferencev1alpha1.Step{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			"nvidia.com/mig-1g.5gb": resource.MustParse("1")}}}, appsv1.RecreateDeploymentStrategyType},
	} {
		if got := pipelinespec.StepStrategy(tc.step); got != tc.want {
			t.Errorf("%s: strategy %s, want %s", name, got, tc.want)
		}
	}

	p := sample()
	p.Spec.Steps = []inferencev1alpha1.Step{{Name: "in", Image: "x", Next: []string{"a", "b"}}, {Name: "a", Image: "x", Port: 7000}, {Name: "b", Image: "x"}}
	w, _ := pipelinespec.Wire(p.Spec.Steps)
	for _, e := range DesiredDeployment(p, 0, w, ModelFetch{}).Spec.Template.Spec.Containers[0].Env {
		if e.Name == pipelinespec.EnvNextStepURLs {
			if e.Value != "http://face-detection-a.vision.svc:7000,http://face-detection-b.vision.svc:8080" {
				t.Fatalf("NEXT_STEP_URLS = %q", e.Value)
			}
			return
		}
	}
	t.Fatal("a fan-out step gets NEXT_STEP_URLS")
}

// A MIG slice is a GPU to the node check: a node without enough of them is reported.
func TestMIGCountsAsGPU(t *testing.T) {
	mig := corev1.ResourceName("nvidia.com/mig-1g.5gb")
	step := inferencev1alpha1.Step{Location: "gpu-1", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{mig: resource.MustParse("2")}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{mig: resource.MustParse("1")}}}
	if reason, msg := nodeProblem(step, map[string]*corev1.Node{"gpu-1": node}); reason != inferencev1alpha1.ReasonInsufficientGPU || !strings.Contains(msg, string(mig)) {
		t.Fatalf("a node with 1 of the 2 MIG slices asked for: %q %q", reason, msg)
	}
	node.Status.Allocatable[mig] = resource.MustParse("2")
	if reason, _ := nodeProblem(step, map[string]*corev1.Node{"gpu-1": node}); reason != "" {
		t.Fatalf("a node with the 2 slices fits, got %q", reason)
	}
	step.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}
	if reason, _ := nodeProblem(step, map[string]*corev1.Node{"gpu-1": node}); reason != inferencev1alpha1.ReasonInsufficientGPU {
		t.Fatalf("a GPU request (not only a limit) is checked against the node, got %q", reason)
	}
}

// A Deployment keeps the short step label it was created with, on itself and on its pods: one made when the label
// held the step's index keeps that index, so an upgrade rolls no step; one without the label gets the step's name.
func TestAStepKeepsTheShortLabelItWasCreatedWith(t *testing.T) {
	p := sample()
	existing := DesiredDeployment(p, 1, pipelinespec.Wiring{}, ModelFetch{})
	existing.Labels[StepShortLabel], existing.Spec.Template.Labels[StepShortLabel] = "1", "1"
	desired := DesiredDeployment(p, 1, pipelinespec.Wiring{}, ModelFetch{})
	keepShortStepLabel(existing, desired)
	if desired.Labels[StepShortLabel] != "1" || desired.Spec.Template.Labels[StepShortLabel] != "1" {
		t.Fatalf("labels %v, pod labels %v: want the index the Deployment was created with", desired.Labels,
			desired.Spec.Template.Labels)
	}
	fresh := DesiredDeployment(p, 1, pipelinespec.Wiring{}, ModelFetch{})
	if want := pipelinespec.StepName(p.Spec.Steps, 1); fresh.Spec.Template.Labels[StepShortLabel] != want {
		t.Fatalf("a new Deployment's pods carry step=%q, want %q", fresh.Spec.Template.Labels[StepShortLabel], want)
	}
}

// A pinned step whose node is NotReady says so, with the node, since when and the node's own reason (not its
// message, whose durations change every heartbeat), rather than the scheduler's "Unschedulable" with the not-ready
// taint's text; a node that reports no Ready condition yet is not called not ready.
func TestANotReadyNodeIsTheStepsProblem(t *testing.T) {
	step := inferencev1alpha1.Step{Location: "gpu-1"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}}
	if reason, _ := nodeProblem(step, map[string]*corev1.Node{"gpu-1": node}); reason != "" {
		t.Fatalf("a node with no Ready condition yet: %q", reason)
	}
	since := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: since}}
	reason, msg := nodeProblem(step, map[string]*corev1.Node{"gpu-1": node})
	if reason != inferencev1alpha1.ReasonNodeNotReady ||
		msg != "node gpu-1 is not ready (Ready=Unknown since 2026-11-27T10:00:00Z, NodeStatusUnknown)" {
		t.Fatalf("NotReady node: %q %q", reason, msg)
	}
}

// A node NotReady for a moment (a kubelet restarting) while the step's replicas still serve is not the step's
// problem: the step is not Degraded for it; once its replicas are not ready, it is.
func TestANotReadyNodeWhileTheStepServes(t *testing.T) {
	p := sample()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady"}}}}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1}}
	o := observed{nodes: map[string]*corev1.Node{"node-1": node}, deployments: map[string]*appsv1.Deployment{"step-0": d}}
	if st := stepState(p, 0, o); st.Reason == inferencev1alpha1.ReasonNodeNotReady {
		t.Errorf("a serving step on a node NotReady for a moment: %s (%s)", st.Reason, st.Message)
	}
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
	if st := stepState(p, 0, o); st.Reason != inferencev1alpha1.ReasonNodeNotReady {
		t.Errorf("a step without ready replicas on a NotReady node: %s (%s), want %s", st.Reason, st.Message, inferencev1alpha1.ReasonNodeNotReady)
	}
}
