package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// A step's readiness becomes its container's readiness probe: a TCP check of its port by default, an HTTP GET of
// its path (on its own port or the step's), the Open Inference Protocol's /v2/health/ready, or a full probe as given.
// An HTTP check may take five seconds: a saturated server answers late, and must not leave its Service for it.
func TestStepReadinessProbe(t *testing.T) {
	tcp := func(port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}, PeriodSeconds: 5}
	}
	get := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
			PeriodSeconds: 5, TimeoutSeconds: 5}
	}
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"ready"}}}, FailureThreshold: 30}
	listen := map[string]string{"listenPort": "9080"}
	for name, tc := range map[string]struct {
		step inferencev1alpha1.Step
		want *corev1.Probe
	}{
		"TCP on the default port": {inferencev1alpha1.Step{}, tcp(8080)},
		"TCP on listenPort":       {inferencev1alpha1.Step{Args: listen}, tcp(9080)},
		"a path on the step's port": {inferencev1alpha1.Step{Args: listen,
			Readiness: &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/ready"}}}, get("/ready", 9080)},
		"a path on its own port": {inferencev1alpha1.Step{Port: 9000,
			Readiness: &inferencev1alpha1.Readiness{HTTPGet: &inferencev1alpha1.HTTPGetReadiness{Path: "/models/arcface", Port: 9100}}}, get("/models/arcface", 9100)},
		"Open Inference Protocol": {inferencev1alpha1.Step{Port: 8000,
			Readiness: &inferencev1alpha1.Readiness{Protocol: inferencev1alpha1.ReadinessOpenInference}}, get("/v2/health/ready", 8000)},
		"a full probe as given": {inferencev1alpha1.Step{ReadinessProbe: exec}, exec},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StepReadinessProbe(tc.step)); diff != "" {
				t.Errorf("probe (-want +got):\n%s", diff)
			}
			p := sample()
			p.Spec.Steps[1] = tc.step
			p.Spec.Steps[1].Image = "x"
			d := DesiredDeployment(p, 1, pipelinespec.Wiring{}, ModelFetch{})
			if diff := cmp.Diff(tc.want, d.Spec.Template.Spec.Containers[0].ReadinessProbe); diff != "" {
				t.Errorf("the Deployment's probe (-want +got):\n%s", diff)
			}
		})
	}
}
