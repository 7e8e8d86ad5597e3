package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TargetRef names the workload a WorkloadSizer sizes, in the sizer's own namespace.
type TargetRef struct {
	// APIVersion of the target. Defaults to apps/v1, the only version supported.
	// +optional
	// +kubebuilder:default="apps/v1"
	// +kubebuilder:validation:Enum="apps/v1"
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the target: Deployment or StatefulSet.
	// +kubebuilder:validation:Enum=Deployment;StatefulSet
	Kind string `json:"kind"`
	// Name of the target: a Deployment's or StatefulSet's name (a DNS subdomain).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// ControlledValues says which resource values the sizer writes.
// +kubebuilder:validation:Enum=RequestsOnly;RequestsAndLimits
type ControlledValues string

const (
	// RequestsOnly writes requests and leaves limits as they are.
	RequestsOnly ControlledValues = "RequestsOnly"
	// RequestsAndLimits writes requests and limits.
	RequestsAndLimits ControlledValues = "RequestsAndLimits"
)

// ContainerResources is the size of one container (or of every container, with containerName "*"). Requests must
// not exceed limits, nor minAllowed maxAllowed: the admission webhook checks that (comparing quantities in CEL
// costs more than the apiserver allows a CRD).
type ContainerResources struct {
	// ContainerName is the container this applies to, or "*" for every container without an entry of its own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ContainerName string `json:"containerName"`
	// Requests to set, e.g. {cpu: 250m, memory: 256Mi}.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Limits to set (ignored with controlledValues RequestsOnly).
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// MinAllowed is the floor of every request and limit the sizer writes.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// MaxAllowed is the ceiling of every request and limit the sizer writes.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
	// ControlledValues: RequestsAndLimits (default) or RequestsOnly.
	// +optional
	// +kubebuilder:default=RequestsAndLimits
	ControlledValues ControlledValues `json:"controlledValues,omitempty"`
}

// UpdateMode says how resource changes reach running pods.
// +kubebuilder:validation:Enum=InPlace;Rolling;Off
type UpdateMode string

const (
	// UpdateModeInPlace resizes running pods through their resize subresource (no restart) and leaves the template
	// alone; when a resize is infeasible it falls back to Rolling.
	UpdateModeInPlace UpdateMode = "InPlace"
	// UpdateModeRolling writes the pod template; the workload rolls its pods under its own update strategy.
	UpdateModeRolling UpdateMode = "Rolling"
	// UpdateModeOff never disturbs running pods: only a target the sizer creates gets the values, in its template.
	UpdateModeOff UpdateMode = "Off"
)

// Language is a runtime the sizer tunes to the container's limits.
// +kubebuilder:validation:Enum=go;java;node;python
type Language string

// Languages the sizer knows.
const (
	LanguageGo     Language = "go"
	LanguageJava   Language = "java"
	LanguageNode   Language = "node"
	LanguagePython Language = "python"
)

// RuntimeSpec makes language runtimes see the container's limits instead of the host's CPUs and memory.
type RuntimeSpec struct {
	// Languages to tune: go (GOMAXPROCS, GOMEMLIMIT), java (JAVA_TOOL_OPTIONS -XX:ActiveProcessorCount,
	// -XX:MaxRAMPercentage), node (NODE_OPTIONS --max-old-space-size), python (PYTHON_CPU_COUNT,
	// OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS).
	// +kubebuilder:validation:MaxItems=4
	// +listType=set
	Languages []Language `json:"languages"`
	// MemoryHeadroomPercent of the memory limit is kept free of the runtime's heap target. Defaults to 10; 0 is a
	// value (the whole limit), kept as written.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=90
	MemoryHeadroomPercent *int32 `json:"memoryHeadroomPercent,omitempty"`
}

// DisruptionProfile picks a PodDisruptionBudget shape.
// +kubebuilder:validation:Enum=Stateless;SingleInstance;Quorum;None
type DisruptionProfile string

// Disruption profiles.
const (
	// ProfileStateless keeps 60% of the pods during voluntary disruptions.
	ProfileStateless DisruptionProfile = "Stateless"
	// ProfileSingleInstance evicts only with the owner's consent (maxUnavailable 0): it blocks drains by design.
	ProfileSingleInstance DisruptionProfile = "SingleInstance"
	// ProfileQuorum lets one pod go at a time.
	ProfileQuorum DisruptionProfile = "Quorum"
	// ProfileNone manages no budget.
	ProfileNone DisruptionProfile = "None"
)

// DisruptionSpec asks for a PodDisruptionBudget owned by the sizer.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.minAvailable) && has(self.maxUnavailable))",message="set minAvailable or maxUnavailable, not both"
type DisruptionSpec struct {
	// Profile: Stateless (minAvailable 60%), SingleInstance (maxUnavailable 0, needs allowBlockingDrains), Quorum
	// (maxUnavailable 1) or None.
	// +kubebuilder:default=Stateless
	Profile DisruptionProfile `json:"profile,omitempty"`
	// MinAvailable overrides the profile.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer (at most 2147483647) or a percentage from 0% to 100%"
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// MaxUnavailable overrides the profile.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 2147483647 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a non-negative integer (at most 2147483647) or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// AllowBlockingDrains creates a budget even when it allows zero evictions, which blocks node drains until
	// someone intervenes. Off by default: such a budget is not created and DisruptionBudgetSafe says why.
	// +optional
	AllowBlockingDrains bool `json:"allowBlockingDrains,omitempty"`
}

// ServiceExpose asks for a Service in front of the target's pods.
type ServiceExpose struct {
	// Enabled creates the Service; false removes it.
	Enabled bool `json:"enabled"`
	// Port the Service listens on. Defaults to 80.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// TargetPort on the pods. Defaults to the port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	TargetPort int32 `json:"targetPort,omitempty"`
	// Type of the Service. Defaults to ClusterIP.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`
}

// IngressExpose asks for an Ingress routing to the Service.
type IngressExpose struct {
	// Enabled creates the Ingress; false removes it. Requires the Service.
	Enabled bool `json:"enabled"`
	// Host the Ingress answers for (a DNS name, optionally "*." and a DNS name); empty answers for every host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host,omitempty"`
	// Path routed to the Service (Prefix match): an absolute path without "//", "/./", "/../" or an encoded slash,
	// as an Ingress requires. Defaults to "/".
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && !['//', '/./', '/../', '%2f', '%2F'].exists(s, self.contains(s)) && !self.endsWith('/.') && !self.endsWith('/..')",message="must be an absolute path (a leading /) without //, /./, /../ or %2f, not ending in /. or /..: an Ingress refuses any other"
	Path string `json:"path,omitempty"`
	// ClassName is the IngressClass (its name); empty uses the cluster default.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClassName string `json:"className,omitempty"`
	// TLSSecretName serves the host over TLS with the certificate of this Secret (its name, in the sizer's namespace).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}

// ExposeSpec puts a Service, and optionally an Ingress, in front of the target.
//
// +kubebuilder:validation:XValidation:rule="!has(self.ingress) || !self.ingress.enabled || (has(self.service) && self.service.enabled)",fieldPath=".ingress.enabled",message="an Ingress needs the Service: set expose.service.enabled too"
type ExposeSpec struct {
	// Service in front of the pods.
	// +optional
	Service *ServiceExpose `json:"service,omitempty"`
	// Ingress in front of the Service.
	// +optional
	Ingress *IngressExpose `json:"ingress,omitempty"`
}

// WorkloadSizerSpec is what size a workload should have.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.image) && has(self.template))",message="set image or template, not both"
// +kubebuilder:validation:XValidation:rule="has(self.targetRef) == has(oldSelf.targetRef)",fieldPath=".targetRef",message="spec.targetRef is immutable: create a new WorkloadSizer for another workload"
type WorkloadSizerSpec struct {
	// TargetRef is the Deployment or StatefulSet to size. Immutable. Unset, the target is the Deployment named
	// like the WorkloadSizer (created from image or template when it does not exist).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.targetRef is immutable: create a new WorkloadSizer for another workload"
	TargetRef *TargetRef `json:"targetRef,omitempty"`
	// Image is a shorthand: when the target does not exist, the sizer creates it with one container "app"
	// of this image, and keeps the target it created on it.
	// +optional
	Image string `json:"image,omitempty"`
	// Template is the pod template of a target the sizer creates when it does not exist. A target the sizer creates
	// is owned by it, follows this template (with resources merged in: what is removed here leaves it), and is
	// deleted with it.
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
	// Size is the number of replicas. Unset leaves replicas to others (an HPA, say). `kubectl scale wls/<name>` and
	// HPAs drive it through the scale subresource.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Size *int32 `json:"size,omitempty"`
	// Resources per container.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=containerName
	Resources []ContainerResources `json:"resources,omitempty"`
	// UpdateMode: Rolling (default), InPlace or Off.
	// +optional
	// +kubebuilder:default=Rolling
	UpdateMode UpdateMode `json:"updateMode,omitempty"`
	// Runtime tunes language runtimes to the container limits through environment variables; values the user set
	// are kept, and options are appended to rather than replaced.
	// +optional
	Runtime *RuntimeSpec `json:"runtime,omitempty"`
	// Disruption asks for a PodDisruptionBudget.
	// +optional
	Disruption *DisruptionSpec `json:"disruption,omitempty"`
	// Expose puts a Service and an Ingress in front of the target.
	// +optional
	Expose *ExposeSpec `json:"expose,omitempty"`
	// ForceOwnership takes over fields another field manager (an HPA, a GitOps tool) owns, instead of reporting the
	// Conflict and leaving them alone.
	// +optional
	ForceOwnership bool `json:"forceOwnership,omitempty"`
}

// AppliedResources are the resources the sizer wrote for one container.
type AppliedResources struct {
	// ContainerName is the container.
	ContainerName string `json:"containerName"`
	// Requests written.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Limits written.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// DisruptionBudgetStatus describes the PodDisruptionBudget the sizer manages.
type DisruptionBudgetStatus struct {
	// Name of the PodDisruptionBudget.
	Name string `json:"name"`
	// DisruptionsAllowed is how many pods may be evicted now, as the disruption controller last computed.
	DisruptionsAllowed int32 `json:"disruptionsAllowed"`
}

// WorkloadSizerStatus is the observed state.
type WorkloadSizerStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas of the target (its status.replicas); the scale subresource's status.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas of the target.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Selector is the target's pod selector as a string (for the scale subresource and HPAs).
	// +optional
	Selector string `json:"selector,omitempty"`
	// Pods are the names of the target's pods, sorted, at most 100.
	// +optional
	// +listType=atomic
	Pods []string `json:"pods,omitempty"`
	// PodCount is how many pods the target has (Pods holds at most 100 of them).
	// +optional
	PodCount int32 `json:"podCount,omitempty"`
	// Resources are the resources written, per container.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	Resources []AppliedResources `json:"resources,omitempty"`
	// DisruptionBudget is the PodDisruptionBudget the sizer manages, if any.
	// +optional
	DisruptionBudget *DisruptionBudgetStatus `json:"disruptionBudget,omitempty"`
	// Conditions: Ready, TargetFound, Sized, Conflict, DisruptionBudgetSafe.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=wls,categories=keelson
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.updateMode`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkloadSizer keeps a Deployment or StatefulSet at its declared size: replicas, container resources, runtime
// settings that follow the limits, a disruption budget that never blocks drains by accident, and optionally a
// Service and Ingress. It writes only the fields it owns and reports, rather than fights, other owners.
type WorkloadSizer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired size.
	Spec WorkloadSizerSpec `json:"spec"`
	// Status is the observed state, written by the controller.
	// +optional
	Status WorkloadSizerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkloadSizerList is a list of WorkloadSizers.
type WorkloadSizerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WorkloadSizers.
	Items []WorkloadSizer `json:"items"`
}

// Target is the workload the sizer sizes: spec.targetRef, or the Deployment named like the sizer when it is unset.
func (w *WorkloadSizer) Target() TargetRef {
	if w.Spec.TargetRef != nil {
		t := *w.Spec.TargetRef
		if t.APIVersion == "" {
			t.APIVersion = "apps/v1"
		}
		return t
	}
	return TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: w.Name}
}

func init() {
	knownTypes = append(knownTypes, &WorkloadSizer{}, &WorkloadSizerList{})
}
