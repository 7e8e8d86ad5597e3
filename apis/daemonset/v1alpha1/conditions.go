package v1alpha1

// The conditions of a DaemonSet's status: their types and the reasons they give. The controller sets them; clients
// and docs read them from here.

// Condition types and reasons on a DaemonSet.
const (
	ConditionReady       = "Ready"
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"

	ReasonAllNodesUpdated    = "AllNodesUpdatedAndAvailable"
	ReasonNodesUnavailable   = "NodesUnavailable"
	ReasonUpdatePending      = "UpdatePending"
	ReasonMinimumAvailable   = "MinimumNodesAvailable"
	ReasonTooManyUnavailable = "TooManyNodesUnavailable"
	ReasonRollingUpdate      = "RollingUpdate"
	ReasonComplete           = "Complete"
	ReasonPaused             = "Paused"
	ReasonOnDelete           = "WaitingForPodDeletion"
	ReasonRolloutStuck       = "RolloutStuck"
	ReasonSelectorMismatch   = "SelectorMismatch"
	ReasonOldPodsKept        = "OldPodsKept"
	ReasonRolledBack         = "RolledBack"
)
