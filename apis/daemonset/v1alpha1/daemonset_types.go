package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DaemonSetSpec is the desired state of a DaemonSet: which pod runs on every eligible node, and how a new template
// rolls out.
//
// +kubebuilder:validation:XValidation:rule="(has(self.image) && size(self.image) > 0) || (has(self.template) && has(self.template.spec) && size(self.template.spec.containers) > 0)",fieldPath=".image",reason="FieldValueRequired",message="set spec.image, or spec.template.spec.containers"
// +kubebuilder:validation:XValidation:rule="!has(self.template) || !has(self.template.spec) || !has(self.template.spec.hostNetwork) || !self.template.spec.hostNetwork || !has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.maxSurge) || self.updateStrategy.rollingUpdate.maxSurge == 0 || self.updateStrategy.rollingUpdate.maxSurge == '0%'",fieldPath=".updateStrategy.rollingUpdate.maxSurge",reason="FieldValueForbidden",message="must be 0 because spec.template.spec.hostNetwork is true: the pod's container ports are host ports, a surge pod starts beside the old pod on the same node and cannot bind the ports the old pod holds, so the rollout would wait forever; use maxUnavailable instead"
type DaemonSetSpec struct {
	// Image is a shorthand for the simplest DaemonSet: when spec.template has no containers, the pods run one
	// container named "app" with this image. When the template holds exactly one container named "app", spec.image
	// (if set) is that container's image. Either spec.image or spec.template.spec.containers is required. (Once
	// spec.template.spec is given, for a node selector say, the pod schema requires its containers: list the
	// shorthand's container as `containers: [{name: app}]` and it takes this image.)
	// +optional
	Image string `json:"image,omitempty"`

	// Selector selects the pods this DaemonSet owns; it must match spec.template's labels. When empty it is
	// defaulted to {daemonset.keelson.dev/name: <name>}. Immutable once set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable: create a new DaemonSet to change it"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template is the pod every eligible node runs. Its restartPolicy must be Always (the default). Pods are
	// pinned to their node with a required node affinity on the node's name, and placed by the scheduler.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.restartPolicy) || self.spec.restartPolicy == 'Always'",fieldPath=".spec.restartPolicy",reason="FieldValueInvalid",message="a DaemonSet's pods must restart: only Always is supported"
	Template corev1.PodTemplateSpec `json:"template,omitzero"`

	// UpdateStrategy says how pods move to a new template.
	// +optional
	// +kubebuilder:default={type: RollingUpdate}
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a new pod must be ready, with no container crashing, before it counts as
	// available. Defaults to 0 (available as soon as it is ready).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is how many old revisions (ControllerRevisions) are kept to allow a rollback by restoring
	// an old template. Defaults to 10.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// DaemonSetUpdateStrategyType names an update strategy.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateStrategyType replaces old pods with new ones node by node, within the rollingUpdate budget.
	RollingUpdateStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteStrategyType replaces an old pod only after a user deletes it.
	OnDeleteStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// DaemonSetUpdateStrategy says how pods move to a new template.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'RollingUpdate' || !has(self.rollingUpdate)",fieldPath=".rollingUpdate",reason="FieldValueForbidden",message="rollingUpdate may only be set when type is RollingUpdate"
type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate (default) or OnDelete.
	// +optional
	// +kubebuilder:default=RollingUpdate
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate tunes the RollingUpdate strategy.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes a rolling update. Beyond apps/v1 it can hold some nodes back (partition), pause,
// and update only the nodes a selector picks (a canary). Pods on NotReady or unreachable nodes never use up the
// maxUnavailable budget, so a dead node does not stall the rollout everywhere else. A pod on a node tainted
// NoSchedule after it started is kept (a new one could not be scheduled there): it is updated in place when inPlace
// allows it, and otherwise stays on its revision, which the Progressing condition reports (OldPodsKept).
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || !has(self.maxSurge) || !(self.maxUnavailable == 0 || self.maxUnavailable == '0%') || !(self.maxSurge == 0 || self.maxSurge == '0%')",reason="FieldValueInvalid",message="maxUnavailable and maxSurge cannot both be 0: the rollout could never replace a pod"
// +kubebuilder:validation:XValidation:rule="!has(self.inPlace) || self.inPlace != 'IfPossible' || !has(self.maxSurge) || self.maxSurge == 0 || self.maxSurge == '0%'",fieldPath=".inPlace",reason="FieldValueForbidden",message="IfPossible requires maxSurge 0: a pod updated in place has no second pod beside it, so the update is paced by maxUnavailable"
type RollingUpdateDaemonSet struct {
	// MaxUnavailable is how many eligible nodes may be without an available pod during the update, as a number or
	// a percentage of the eligible nodes (rounded up). Defaults to 1. Pods on nodes that were NotReady or
	// unreachable before the rollout reached them are not counted against it; a node that goes down after its pod
	// was updated is, so a revision that breaks nodes stops.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer (at most 2147483647) or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many nodes may briefly run an old and a new pod side by side (the new one starts before the
	// old one stops), as a number or a percentage of the eligible nodes (rounded up). Defaults to 0. Must be 0 when
	// a container uses a hostPort or the pod uses hostNetwork, whose container ports are host ports (the admission
	// webhook rejects that; the controller never surges such a template).
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer (at most 2147483647) or a percentage from 0% to 100%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Partition is how many eligible nodes keep the old revision. Nodes are updated in order of their names; the
	// last partition nodes in that order wait. Nodes that join or leave later move no other node in or out: the
	// nodes held are those that still run an old pod first (from the last name down), then nodes without a pod,
	// and an updated pod is never taken back, so a new node gets the update revision while partition nodes still
	// run the old one. 0 (default) updates every node.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Partition *int32 `json:"partition,omitempty"`

	// Paused stops replacing old pods; new nodes still get a pod of the new revision. Unpause to continue.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Selector limits the update to nodes whose labels match it (a canary): other nodes keep their current pods.
	// Empty updates every node.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// InPlace says whether a pod may be updated in place rather than replaced. With IfPossible, a pod whose
	// revision differs from the new one only in container images and pod labels is patched (an image whose default
	// pull policy differs, such as a move to :latest, or a changed annotation replaces the pod): it
	// keeps its name, UID, IP, volumes and node, and the kubelet restarts the changed containers with their new
	// images. The pod counts as unavailable (within maxUnavailable) until every changed container runs again and
	// the pod is ready. Any other difference replaces the pod, as Never (the default) always does. IfPossible
	// requires maxSurge 0.
	// +optional
	InPlace InPlacePolicy `json:"inPlace,omitempty"`

	// InPlaceReadinessGate says whether pods created while InPlace is IfPossible carry a readiness gate that takes
	// them out of their Services while they are updated in place: Enabled (the default) or Disabled. With the gate an
	// update in place costs three writes to the pod (the gate closed, the patch, the gate opened) and a new pod one
	// write more; without it, one patch, but the pod stays in its Services until the kubelet stops its container.
	// Disable it for daemons no Service sends traffic to (log, metrics, network and storage agents).
	// +optional
	InPlaceReadinessGate InPlaceReadinessGatePolicy `json:"inPlaceReadinessGate,omitempty"`

	// FailurePolicy says what the rollout does when pods of the new revision fail on too many nodes: go on
	// (Continue, the default, as apps/v1 does), pause, or roll back to the last revision that ran available on every
	// eligible node. The DaemonSet's status then records the failure (status.rolloutFailure) until the template or
	// this policy changes.
	// +optional
	FailurePolicy *RolloutFailurePolicy `json:"failurePolicy,omitempty"`
}

// RolloutFailureAction is what a rollout does once its failure policy's threshold is crossed.
// +kubebuilder:validation:Enum=Continue;Pause;Rollback
type RolloutFailureAction string

const (
	// RolloutFailureContinue goes on within maxUnavailable, as apps/v1 does.
	RolloutFailureContinue RolloutFailureAction = "Continue"
	// RolloutFailurePause stops updating nodes; pods of nodes that join or lose their pod get the last revision that
	// ran everywhere. Failed pods of the new revision stay for inspection.
	RolloutFailurePause RolloutFailureAction = "Pause"
	// RolloutFailureRollback moves every pod of the failed revision back to the last revision that ran available on
	// every eligible node (in place where inPlace allows it), within maxUnavailable.
	RolloutFailureRollback RolloutFailureAction = "Rollback"
)

// RolloutFailurePolicy tells when a rollout has failed and what it then does. A node has failed when its pod of the
// new revision crash-loops, cannot pull its image or start its container, is unschedulable or failed, is not ready
// progressDeadlineSeconds after it was created or updated in place, or when the node went NotReady after its pod was
// updated. The policy acts when more nodes than maxFailedNodes have failed. The failure is recorded in
// status.rolloutFailure and holds while the template and this policy stay as they were: a new template rolls out
// afresh, and a change to this policy (raising maxFailedNodes, say) tries the failed revision again.
type RolloutFailurePolicy struct {
	// Action is Continue (the default), Pause or Rollback.
	// +optional
	// +kubebuilder:default=Continue
	Action RolloutFailureAction `json:"action,omitempty"`

	// MaxFailedNodes is how many nodes may fail before the action is taken, as a number or a percentage of the
	// eligible nodes (rounded down). Defaults to 0: the first failed node.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer (at most 2147483647) or a percentage from 0% to 100%"
	MaxFailedNodes *intstr.IntOrString `json:"maxFailedNodes,omitempty"`

	// ProgressDeadlineSeconds is how long a pod of the new revision may take to become ready after it was created
	// or updated in place before its node counts as failed. It is also how long a revision's pods must have been
	// ready, without interruption, on every eligible node before it becomes the stable revision a rollback goes
	// back to (a container that crashes moments after it starts is ready for those moments). Defaults to 600.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// RolloutFailure records a rollout its failure policy stopped.
type RolloutFailure struct {
	// Revision is the update revision whose pods failed.
	Revision string `json:"revision"`
	// Action is what the policy did: Pause or Rollback.
	Action RolloutFailureAction `json:"action"`
	// RolledBackTo is the revision the pods were moved back to (Rollback only).
	// +optional
	RolledBackTo string `json:"rolledBackTo,omitempty"`
	// Generation is the spec generation whose rollout failed.
	Generation int64 `json:"generation"`
	// Policy is the failure policy that acted. The failure holds while the template and the failure policy are
	// those it failed under: a new template rolls out afresh, and a changed failurePolicy (a higher maxFailedNodes,
	// say) tries the failed revision again. Other changes (pausing the rollout, a partition) keep it.
	// +optional
	Policy RolloutFailurePolicy `json:"policy,omitzero"`
	// FailedNodes is how many nodes had failed when the policy acted.
	FailedNodes int32 `json:"failedNodes"`
	// Message names the failed nodes (the first five in name order) and why each failed.
	Message string `json:"message"`
	// Time is when the policy acted.
	Time metav1.Time `json:"time"`
}

// InPlaceReadinessGatePolicy says whether pods updated in place carry the in-place readiness gate.
// +kubebuilder:validation:Enum=Enabled;Disabled
type InPlaceReadinessGatePolicy string

const (
	// InPlaceReadinessGateEnabled gives new pods the gate: Services stop sending traffic before an update in place.
	InPlaceReadinessGateEnabled InPlaceReadinessGatePolicy = "Enabled"
	// InPlaceReadinessGateDisabled gives new pods no gate: an update in place is one patch.
	InPlaceReadinessGateDisabled InPlaceReadinessGatePolicy = "Disabled"
)

// InPlacePolicy says whether a rolling update may update a pod in place.
// +kubebuilder:validation:Enum=IfPossible;Never
type InPlacePolicy string

const (
	// InPlaceIfPossible updates a pod in place when only container images and pod labels change.
	InPlaceIfPossible InPlacePolicy = "IfPossible"
	// InPlaceNever always replaces a pod with a new one.
	InPlaceNever InPlacePolicy = "Never"
)

// DaemonSetStatus is the observed state of a DaemonSet. Counts are of eligible nodes unless they say otherwise.
type DaemonSetStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// DesiredNumberScheduled is how many nodes should run the pod.
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	// CurrentNumberScheduled is how many nodes that should run the pod run at least one.
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	// NumberMisscheduled is how many nodes run the pod but should not.
	NumberMisscheduled int32 `json:"numberMisscheduled"`
	// NumberReady is how many nodes that should run the pod run at least one ready pod.
	NumberReady int32 `json:"numberReady"`
	// NumberAvailable is how many nodes that should run the pod run at least one pod available for
	// minReadySeconds (tools that read a Deployment's availableReplicas read the same count here).
	// +optional
	NumberAvailable int32 `json:"numberAvailable,omitempty"`
	// NumberUnavailable is how many nodes that should run the pod run no available pod.
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`
	// UpdatedNumberScheduled is how many nodes run a pod of the update revision.
	// +optional
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled,omitempty"`

	// CurrentRevision is the revision most nodes ran before the update now in progress (equal to UpdateRevision
	// once the update is complete).
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the revision of the current template.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount counts hash collisions of revision names; it salts the next revision's hash.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// StableRevision is the newest revision that ran on every eligible node with every pod ready, without
	// interruption, for the failure policy's progressDeadlineSeconds (minReadySeconds without a policy): the
	// revision a failure policy of Rollback moves pods back to. A node that joined within that time needs its pod
	// ready only, once a node that was there has had its pod ready for all of it.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// RolloutFailure records the rollout the failure policy paused or rolled back, while it holds: while it does,
	// UpdateRevision and the counters describe what runs (the stable revision after a rollback).
	// +optional
	RolloutFailure *RolloutFailure `json:"rolloutFailure,omitempty"`

	// Conditions: Ready (every eligible node runs an available pod, and every node the rollout may update, that
	// is not held back by the partition or the canary selector, runs the update revision), Available (no more
	// nodes unavailable than maxUnavailable allows) and Progressing (reason RolloutStuck names the nodes and pods
	// that keep the update from going on, and why; reason OldPodsKept names the nodes that keep a pod of an old
	// revision because an untolerated NoSchedule taint came after it: no new pod could be scheduled there, so the old
	// one is neither deleted nor replaced, only updated in place when inPlace allows it).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kds,categories=keelson
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNumberScheduled`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.currentNumberScheduled`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.numberReady`
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedNumberScheduled`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.numberAvailable`
// +kubebuilder:printcolumn:name="Node Selector",type=string,JSONPath=`.spec.template.spec.nodeSelector`
// +kubebuilder:printcolumn:name="In-place",type=string,JSONPath=`.spec.updateStrategy.rollingUpdate.inPlace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DaemonSet runs one pod on every eligible node: nodes its template's node selector, required node affinity and
// tolerations admit. It follows apps/v1's DaemonSet and adds partitioned, paused and canary rollouts, rollouts that
// go on past dead nodes, and conditions that say why a rollout is stuck.
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	// +optional
	Spec DaemonSetSpec `json:"spec,omitempty"`
	// Status is the observed state, written by the controller.
	// +optional
	Status DaemonSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DaemonSetList is a list of DaemonSets.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the DaemonSets.
	Items []DaemonSet `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &DaemonSet{}, &DaemonSetList{})
}
