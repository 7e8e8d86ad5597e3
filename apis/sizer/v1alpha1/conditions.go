package v1alpha1

// The conditions of a WorkloadSizer's status: their types and the reasons they give. The controller sets them;
// clients and docs read them from here.

// Condition types and reasons.
const (
	ConditionReady        = "Ready"
	ConditionTargetFound  = "TargetFound"
	ConditionSized        = "Sized"
	ConditionConflict     = "Conflict"
	ConditionBudgetSafe   = "DisruptionBudgetSafe"
	ReasonFound           = "Found"
	ReasonCreated         = "Created"
	ReasonTargetNotFound  = "TargetNotFound"
	ReasonApplied         = "Applied"
	ReasonApplyFailed     = "ApplyFailed"
	ReasonRollingOut      = "RollingOut"
	ReasonResizing        = "ResizingInPlace"
	ReasonInPlaceFallback = "InPlaceInfeasible"
	ReasonModeOff         = "UpdateModeOff"
	// ReasonContainerNotFound: a resources entry names no container of the workload.
	ReasonContainerNotFound = "ContainerNotFound"
	ReasonNoConflict        = "NoConflict"
	ReasonReady             = "Ready"
	ReasonNotReady          = "NotReady"
	// ReasonReplicaFailure: the workload cannot create its pods (a quota, an admission webhook, a policy).
	ReasonReplicaFailure = "ReplicaFailure"
	// ReasonProgressDeadline: the workload's rollout stopped making progress.
	ReasonProgressDeadline = "ProgressDeadlineExceeded"
)

// Reasons of the Conflict condition: why the sizer leaves something alone instead of writing it.
const (
	// ReasonConflict: a field the sizer would write is owned by another field manager with another value.
	ReasonConflict = "FieldOwnedByAnotherManager"
	// ReasonObjectNotOwned: a PodDisruptionBudget, Service or Ingress of the name the sizer would use exists and was
	// not created by this sizer.
	ReasonObjectNotOwned = "ObjectNotOwned"
	// ReasonBudgetOverlap: another PodDisruptionBudget already selects the workload's pods (two budgets over one
	// pod make every eviction of it fail).
	ReasonBudgetOverlap = "BudgetOverlap"
	// ReasonAnotherSizer: an older WorkloadSizer sizes the same workload.
	ReasonAnotherSizer = "AnotherSizer"
	// ReasonTakenBack: under forceOwnership, another writer took the sizer's fields back again and again; the sizer
	// stopped forcing them.
	ReasonTakenBack = "FieldsTakenBack"
	// ReasonAutoscaler: a HorizontalPodAutoscaler scales the workload while spec.size is set.
	ReasonAutoscaler = "AutoscalerOnTarget"
	// ReasonAutoscalerWithoutSize: a HorizontalPodAutoscaler scales the sizer while spec.size is unset, so it reads
	// 0 replicas and does nothing.
	ReasonAutoscalerWithoutSize = "AutoscalerWithoutSize"
	// ReasonVerticalAutoscaler: a VerticalPodAutoscaler that updates pods sizes the workload's containers while
	// spec.resources sizes them too.
	ReasonVerticalAutoscaler = "VerticalAutoscalerOnTarget"
)

// Reasons of the DisruptionBudgetSafe condition.
const (
	ReasonBudgetNotRequested  = "NotRequested"
	ReasonBudgetNoReplicas    = "NoReplicas"
	ReasonBudgetAllows        = "AllowsEvictions"
	ReasonBudgetWouldBlock    = "WouldBlockDrains"
	ReasonBudgetBlockingByAsk = "BlocksDrainsAsAllowed"
)

// ReasonTargetControlled means that the workload is controlled by another controller (its controller owner reference
// names, say, a Pipeline whose step it is), which writes its spec: sizing it would undo that controller's writes and
// have them undone in turn, rolling its pods on every round. The sizer writes nothing to it.
const ReasonTargetControlled = "TargetControlled"
