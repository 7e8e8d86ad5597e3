package v1alpha1

// The conditions of a Pipeline's status, and the reasons they and its steps (status.steps[].reason) give. The
// controller sets them; clients and docs read them from here.

// Condition types and reasons.
const (
	ConditionStorageReady = "StorageReady"
	ConditionStepsReady   = "StepsReady"
	ConditionReady        = "Ready"

	ReasonBound           = "Bound"
	ReasonStorageWaiting  = "WaitingForBinding"
	ReasonStorageLost     = "ClaimLost"
	ReasonAllStepsReady   = "AllStepsReady"
	ReasonStepsNotReady   = "StepsNotReady"
	ReasonReady           = "Ready"
	ReasonNotReady        = "NotReady"
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonNodeNotFound    = "NodeNotFound"
	ReasonNodeNotReady    = "NodeNotReady"
	ReasonNodeCordoned    = "NodeCordoned"
	ReasonInsufficientGPU = "InsufficientGPU"
	ReasonCreating        = "Creating"
	ReasonStarting        = "Starting"
	ReasonCrashLooping    = "CrashLoopBackOff"
	ReasonDeadline        = "ProgressDeadlineExceeded"
	ReasonDeleting        = "Deleting"
	// ReasonCache: storage cache, which needs nothing bound.
	ReasonCache = "Cache"
	// ReasonModelFetchFailed: the step's model could not be fetched into its node's cache (status.steps[].model
	// says why); the fetch is retried with the pod's back-off.
	ReasonModelFetchFailed = "ModelFetchFailed"
	// ReasonApplyFailed: the apiserver refused the step's Deployment or Service (or the storage); the message is
	// its answer. The status keeps the last observedGeneration until a pass succeeds.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNameTaken: an object of the step's name exists and is not this pipeline's; it is left alone.
	ReasonNameTaken = "NameTaken"
	// ReasonImagePull: the step's image cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName).
	ReasonImagePull = "ImagePullBackOff"
	// ReasonContainerConfig: the kubelet cannot create the container (a missing Secret or ConfigMap, say).
	ReasonContainerConfig = "CreateContainerConfigError"
	// ReasonUnschedulable: the scheduler cannot place the step's pod; the message is the scheduler's.
	ReasonUnschedulable = "Unschedulable"
	// ReasonFailedMount, ReasonFailedAttachVolume, ReasonFailedMapVolume: a pod cannot get its volume; the message
	// is the kubelet's or the attach controller's event (a share that cannot be mounted, a ReadWriteOnce claim
	// attached to another node, a block volume that cannot be mapped).
	ReasonFailedMount        = "FailedMount"
	ReasonFailedAttachVolume = "FailedAttachVolume"
	ReasonFailedMapVolume    = "FailedMapVolume"
)

// ReasonAmbiguousAutoscalers means that more than one HorizontalPodAutoscaler scales a step's Deployment. Kubernetes
// then scales it with none of them, so the step keeps the replicas it has; it still serves (its phase is unchanged),
// and its reason and a Warning event say which autoscalers to reduce to one.
const ReasonAmbiguousAutoscalers = "AmbiguousAutoscalers"

// ReasonHandOverFailed means that a step's replicas could not be handed over to its autoscaler (the apiserver refused
// the change of the Deployment's field ownership, or kept it); the message is its answer. The step's Deployment is not
// applied meanwhile: an apply without replicas would reset them to 1 under the autoscaler's feet.
const ReasonHandOverFailed = "ReplicasHandOverFailed"

// ReasonPortTaken means that the step's Service already has a port of the step's number under another name, which
// another field manager owns; the Service is left alone.
const ReasonPortTaken = "PortTaken"

// ReasonReadinessFailing means that a step's pods run, and their readiness check fails; the message is what the check
// answers (the kubelet's Unhealthy event). A model still loading answers so until it is loaded; a check that never
// passes ends as ProgressDeadlineExceeded.
const ReasonReadinessFailing = "ReadinessFailing"

// ReasonRollingOut means that the step serves while its Deployment moves to a new template (or its controller has
// not seen the new one yet). The step stays Ready: enough replicas serve; a new version that never comes up ends as
// ProgressDeadlineExceeded, a crash loop or an image that cannot be pulled as theirs.
const ReasonRollingOut = "RollingOut"
