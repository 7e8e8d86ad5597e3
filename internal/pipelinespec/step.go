package pipelinespec

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
)

const (
	// DefaultPort is a step's port when neither port nor args.listenPort say.
	DefaultPort = 8080
	// DefaultDriver is the CSI driver of the models' PersistentVolume.
	DefaultDriver = "nfs.csi.k8s.io"
)

// Environment variables every step gets.
const (
	EnvModelPath     = "MODEL_PATH"
	EnvNextStepURL   = "NEXT_STEP_URL"
	EnvNextStepURLs  = "NEXT_STEP_URLS"
	EnvPipelineName  = "PIPELINE_NAME"
	EnvStepName      = "STEP_NAME"
	listenPortArgKey = "listenPort"
)

// ControllerEnv lists the environment variables the controller sets on every step's container: a step's own env
// may not name them (the apiserver refuses a server-side apply that lists one name twice, so the step would fail
// on every pass).
var ControllerEnv = []string{EnvPipelineName, EnvStepName, EnvModelPath, EnvNextStepURL, EnvNextStepURLs}

// StepObjectName names a step's Deployment and Service.
func StepObjectName(p *inferencev1alpha1.Pipeline, step string) string { return p.Name + "-" + step }

// StepPort is the step's port: port, else args.listenPort, else 8080.
func StepPort(s inferencev1alpha1.Step) int32 {
	if s.Port != 0 {
		return s.Port
	}
	if v, err := strconv.Atoi(s.Args[listenPortArgKey]); err == nil && v > 0 && v < 65536 {
		return int32(v)
	}
	return DefaultPort
}

// StepStrategy is the step's Deployment strategy: its own, else Recreate for a single-replica GPU step (a rolling
// update would start the new pod first and wait forever for the GPU the old one holds), else RollingUpdate. A step an
// autoscaler scales rolls without a surge instead (autoscaledStrategy).
func StepStrategy(s inferencev1alpha1.Step) appsv1.DeploymentStrategyType {
	if s.Strategy != "" {
		return s.Strategy
	}
	if WantsGPU(s) && ptr.Deref(s.Replicas, 1) == 1 {
		return appsv1.RecreateDeploymentStrategyType
	}
	return appsv1.RollingUpdateDeploymentStrategyType
}
