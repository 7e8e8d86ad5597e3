package pipeline

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// OpenInferenceReadyPath is the Open Inference Protocol's server readiness endpoint: it answers 200 once the
// server's models are loaded, which is what "ready" must mean for a step (an open port only says the process
// started).
const OpenInferenceReadyPath = "/v2/health/ready"

// readinessPeriodSeconds is how often a step's readiness is checked: often enough that a step that loaded its
// model (or lost it) shows within seconds.
const readinessPeriodSeconds = 5

// readinessTimeoutSeconds is how long an HTTP readiness check may take. A GPU server saturated with requests answers
// its health endpoint late; with the default of one second it would fail its probe under load and drop out of the
// Service exactly when it is needed most, pushing the load onto the replicas left.
const readinessTimeoutSeconds = 5

// StepReadinessProbe is the readiness probe of a step's container: its readinessProbe as given; else its readiness
// (an HTTP GET of its path, on its port or the step's; or the protocol's endpoint on the step's port); else a TCP
// check of the step's port. An HTTP check may take readinessTimeoutSeconds.
func StepReadinessProbe(s inferencev1alpha1.Step) *corev1.Probe {
	if s.ReadinessProbe != nil {
		return s.ReadinessProbe
	}
	port := pipelinespec.StepPort(s)
	handler := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}
	if r := s.Readiness; r != nil {
		switch {
		case r.HTTPGet != nil:
			if r.HTTPGet.Port != 0 {
				port = r.HTTPGet.Port
			}
			handler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: r.HTTPGet.Path, Port: intstr.FromInt32(port)}}
		case r.Protocol == inferencev1alpha1.ReadinessOpenInference:
			handler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: OpenInferenceReadyPath, Port: intstr.FromInt32(port)}}
		}
	}
	probe := &corev1.Probe{ProbeHandler: handler, PeriodSeconds: readinessPeriodSeconds}
	if handler.HTTPGet != nil {
		probe.TimeoutSeconds = readinessTimeoutSeconds
	}
	return probe
}
