package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageType says where a pipeline's models live.
// +kubebuilder:validation:Enum=nfs;pvc;cache
type StorageType string

// Storage types.
const (
	// StorageNFS: an NFS share; the controller creates a read-only PersistentVolume and claim for it.
	StorageNFS StorageType = "nfs"
	// StoragePVC: an existing PersistentVolumeClaim; the controller creates nothing.
	StoragePVC StorageType = "pvc"
	// StorageCache: no shared storage; each step's model is a URI: http(s):// or s3:// (fetched into the cache on
	// the step's node), or pvc:// (a claim of the namespace).
	StorageCache StorageType = "cache"
)

// ModelCache is how steps fetch their models into the cache on their nodes: the steps whose model is an http(s)://
// or s3:// URI, with any storage type. A model is fetched once per node: a restarted step, or another step on the
// node with the same model, starts from the cache. An init container of the step runs the fetch, with the pipeline
// controller's own image. By default the cache is a directory of each node that the cluster's operators choose
// (the chart's pipelineController.modelCache), one per namespace; localVolume puts it on a PersistentVolume of the
// node instead, for namespaces whose Pod Security forbids hostPath volumes.
type ModelCache struct {
	// S3SecretName names a Secret in the pipeline's namespace that says how s3:// models are reached, by key:
	// endpoint (host[:port], or an http(s):// URL; required for s3), region (defaults to us-east-1), accessKeyID
	// and secretAccessKey (both, or neither for anonymous access), sessionToken, insecure ("true" speaks plain HTTP).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	S3SecretName string `json:"s3SecretName,omitempty"`
	// CABundle names a ConfigMap in the pipeline's namespace whose key holds the PEM certificates of a private
	// certificate authority: the fetches trust it, beside the public roots they carry, for https:// models and
	// s3:// endpoints that speak TLS. It suits a bundle that trust-manager or an operator copies into each namespace.
	// +optional
	CABundle *ConfigMapKey `json:"caBundle,omitempty"`
	// LocalVolume keeps the cache on a PersistentVolume of each node instead of the node's directory: the
	// controller makes one claim per pipeline and node (<pipeline>-model-cache-<hash>), shared by the pipeline's
	// steps pinned to that node, and deletes it with the pipeline or when no step is pinned to the node any more.
	// A step without a location has no node to keep a cache on: it fetches its model into its pod at every start.
	// +optional
	LocalVolume *LocalCacheVolume `json:"localVolume,omitempty"`
}

// ConfigMapKey is one key of a ConfigMap in the pipeline's namespace.
type ConfigMapKey struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key of the ConfigMap that holds the certificates. Defaults to ca.crt.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && !self.startsWith('..')",message="must not be '.' or start with '..'"
	Key string `json:"key,omitempty"`
}

// LocalCacheVolume is the model cache on a PersistentVolume of each node (modelStorage.cache.localVolume).
type LocalCacheVolume struct {
	// StorageClassName of the cache claims: a class of node-local volumes (local PersistentVolumes, or a local-path
	// provisioner's) that binds WaitForFirstConsumer, so that each claim binds to a volume on its step's node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName"`
	// Size each claim asks for. The cache keeps at most a third of it, less 5% (the least recently used models are
	// evicted to stay below that), so that a new model, at most as large, is downloaded as an archive and unpacked beside
	// the ones it keeps. Defaults to 50Gi. A new class or size is a new claim on each node, filled anew.
	// +optional
	// +kubebuilder:default="50Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="must be greater than zero: each cache claim asks for it"
	Size *resource.Quantity `json:"size,omitempty"`
}

// ModelStorage is where the models live. Immutable but for its cache: models move with a new pipeline.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'nfs' || (has(self.csiParameter) && 'server' in self.csiParameter && 'share' in self.csiParameter && size(self.csiParameter['server']) > 0 && size(self.csiParameter['share']) > 0)",fieldPath=".csiParameter",reason="FieldValueRequired",message="type nfs needs csiParameter.server and csiParameter.share"
// +kubebuilder:validation:XValidation:rule="self.type != 'pvc' || (has(self.claimName) && size(self.claimName) > 0)",fieldPath=".claimName",reason="FieldValueRequired",message="type pvc needs claimName"
type ModelStorage struct {
	// Type is nfs, pvc or cache.
	Type StorageType `json:"type"`
	// Cache says how the steps whose model is an http(s):// or s3:// URI fetch it into the cache on their node.
	// +optional
	Cache *ModelCache `json:"cache,omitempty"`
	// CSIParameter holds the NFS share: server and share, plus any other volume attributes the
	// CSI driver takes.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	CSIParameter map[string]string `json:"csiParameter,omitempty"`
	// Driver is the CSI driver of the PersistentVolume. Defaults to nfs.csi.k8s.io.
	// +optional
	// +kubebuilder:default="nfs.csi.k8s.io"
	// +kubebuilder:validation:MaxLength=253
	Driver string `json:"driver,omitempty"`
	// CSI uses the CSI driver (default); false makes an in-tree nfs volume instead.
	// +optional
	// +kubebuilder:default=true
	CSI *bool `json:"csi,omitempty"`
	// Capacity of the PersistentVolume and claim. Defaults to 10Gi.
	// +optional
	// +kubebuilder:default="10Gi"
	Capacity *resource.Quantity `json:"capacity,omitempty"`
	// MountOptions of the NFS mount.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	MountOptions []string `json:"mountOptions,omitempty"`
	// ReadOnly mounts the models read-only (default).
	// +optional
	// +kubebuilder:default=true
	ReadOnly *bool `json:"readOnly,omitempty"`
	// ClaimName is the existing PersistentVolumeClaim (type pvc): its name, in the pipeline's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName,omitempty"`
}

// ReadinessProtocol names a serving protocol whose own readiness check a step answers.
// +kubebuilder:validation:Enum=OpenInference
type ReadinessProtocol string

// Readiness protocols.
const (
	// ReadinessOpenInference is the Open Inference Protocol (KServe v2, Triton, MLServer): the server is ready when
	// GET /v2/health/ready answers 200, which it does once its models are loaded.
	ReadinessOpenInference ReadinessProtocol = "OpenInference"
)

// HTTPGetReadiness checks a step with an HTTP GET: ready while the answer's status is 2xx or 3xx.
type HTTPGetReadiness struct {
	// Path to GET, starting with "/" (e.g. /ready).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/\S*$`
	Path string `json:"path"`
	// Port to GET on. Defaults to the step's port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// Readiness says how to tell that a step is ready to serve: exactly one of httpGet and protocol.
//
// +kubebuilder:validation:XValidation:rule="has(self.httpGet) != has(self.protocol)",reason="FieldValueInvalid",message="exactly one of httpGet and protocol"
type Readiness struct {
	// HTTPGet checks a path of the step's server.
	// +optional
	HTTPGet *HTTPGetReadiness `json:"httpGet,omitempty"`
	// Protocol checks the readiness endpoint of a serving protocol on the step's port: OpenInference
	// (GET /v2/health/ready).
	// +optional
	Protocol ReadinessProtocol `json:"protocol,omitempty"`
}

// Step is one stage of the pipeline: a Deployment and a Service on its node.
//
// +kubebuilder:validation:XValidation:rule="!has(self.readiness) || !has(self.readinessProbe)",fieldPath=".readiness",reason="FieldValueForbidden",message="at most one of readiness and readinessProbe"
type Step struct {
	// Name of the step (DNS-1123 label, unique in the pipeline): its identity, which names its Deployment and
	// Service. Required: a step named by its position would take over another step's Deployment, node and model
	// when a step is inserted before it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`
	// Image of the step's server.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Location is the node the step must run on (its kubernetes.io/hostname label, so a label value). Empty lets the
	// scheduler choose.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	Location string `json:"location,omitempty"`
	// Model is the step's model, which the step finds at MODEL_PATH (/models). Either a path on the pipeline's
	// storage (nfs or pvc; relative, no ".." segment; empty mounts the whole share), or a URI, with any storage type:
	//   - http(s)://host/file: downloaded (an archive, .tar, .tar.gz, .tgz or .zip, is unpacked) into the cache on
	//     the step's node (modelStorage.cache);
	//   - s3://bucket/prefix: one object, or all below the prefix, into the cache too (modelStorage.cache.s3SecretName
	//     says where the store is);
	//   - pvc://claim/path: a directory of a claim of the pipeline's namespace, mounted read-only, not copied.
	// An http(s) or s3 URI may pin its content with #sha256=<hex>; the step finds such a model at /models as links
	// to the files and directories at its top.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Model string `json:"model,omitempty"`
	// Args become container arguments --key=value, sorted by key. listenPort sets the port (unless port is set).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Args map[string]string `json:"args,omitempty"`
	// Replicas of the step. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Resources of the step's container, GPUs included (e.g. nvidia.com/gpu: 1).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Port the step serves on. Defaults to args.listenPort, else 8080.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// Env adds environment variables to the step's container.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Readiness says when the step is ready to serve: when its model is loaded, not when its port opens. Either an
	// HTTP GET of a path, or a serving protocol's readiness check (OpenInference: GET /v2/health/ready). Defaults to
	// a TCP check of the port. A step gets requests only while it is ready, and the pipeline is Ready only while
	// every step is.
	// +optional
	Readiness *Readiness `json:"readiness,omitempty"`
	// ReadinessProbe of the step, in full: for checks that readiness cannot say (an exec, custom thresholds).
	// At most one of readiness and readinessProbe. Defaults to readiness's check.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// Tolerations let the step's pods onto tainted nodes, such as GPU nodes tainted nvidia.com/gpu:NoSchedule.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Strategy of the step's Deployment: RollingUpdate, or Recreate (the default for a step that asks for a GPU
	// with one replica: a rolling update would wait forever for the GPU the old pod holds).
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;Recreate
	Strategy appsv1.DeploymentStrategyType `json:"strategy,omitempty"`
	// Next names the steps this one sends its results to. Defaults to the following step (a chain); several make
	// a fan-out (NEXT_STEP_URLS).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Next []string `json:"next,omitempty"`
}

// PipelineSpec is the desired pipeline.
type PipelineSpec struct {
	// ModelStorage is where the models live. Immutable, but for its cache settings.
	// +kubebuilder:validation:XValidation:rule="self.type == oldSelf.type && (has(self.csiParameter) && size(self.csiParameter) > 0) == (has(oldSelf.csiParameter) && size(oldSelf.csiParameter) > 0) && (!(has(self.csiParameter) && size(self.csiParameter) > 0) || self.csiParameter == oldSelf.csiParameter) && has(self.driver) == has(oldSelf.driver) && (!has(self.driver) || self.driver == oldSelf.driver) && has(self.csi) == has(oldSelf.csi) && (!has(self.csi) || self.csi == oldSelf.csi) && has(self.capacity) == has(oldSelf.capacity) && (!has(self.capacity) || quantity(string(self.capacity)).compareTo(quantity(string(oldSelf.capacity))) == 0) && (has(self.mountOptions) && size(self.mountOptions) > 0) == (has(oldSelf.mountOptions) && size(oldSelf.mountOptions) > 0) && (!(has(self.mountOptions) && size(self.mountOptions) > 0) || self.mountOptions == oldSelf.mountOptions) && has(self.readOnly) == has(oldSelf.readOnly) && (!has(self.readOnly) || self.readOnly == oldSelf.readOnly) && has(self.claimName) == has(oldSelf.claimName) && (!has(self.claimName) || self.claimName == oldSelf.claimName)",message="spec.modelStorage is immutable but for its cache: create a new pipeline to move its models"
	ModelStorage ModelStorage `json:"modelStorage"`
	// Steps of the pipeline, in order. The first step without a predecessor is the entry (status.url). A step's
	// identity is its name: adding, removing or reordering steps changes no other step's objects.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Steps []Step `json:"steps"`
}

// Phase summarises a pipeline or a step.
// +kubebuilder:validation:Enum=Pending;Progressing;Ready;Degraded;Failed;Deleting
type Phase string

// Phases.
const (
	PhasePending     Phase = "Pending"
	PhaseProgressing Phase = "Progressing"
	PhaseReady       Phase = "Ready"
	PhaseDegraded    Phase = "Degraded"
	PhaseFailed      Phase = "Failed"
	PhaseDeleting    Phase = "Deleting"
)

// StepPhase is one step's phase: its Deployment's.
type StepPhase struct {
	// Name of the step.
	Name string `json:"name"`
	// DeploymentPhase of the step's Deployment.
	DeploymentPhase Phase `json:"deploymentPhase"`
}

// DetailPhase details the pipeline's phase object by object: its storage's and each step's.
type DetailPhase struct {
	// PVPhase is the PersistentVolume's phase (Available, Bound, Released, …), empty for type pvc.
	// +optional
	PVPhase string `json:"pvPhase,omitempty"`
	// PVCPhase is the claim's phase (Pending, Bound, Lost).
	// +optional
	PVCPhase string `json:"pvcPhase,omitempty"`
	// StepsPhase is each step's Deployment phase.
	// +optional
	// +listType=atomic
	StepsPhase []StepPhase `json:"stepsPhase,omitempty"`
}

// Failure is the last time a step's container stopped with an error.
type Failure struct {
	// Container that failed.
	Container string `json:"container"`
	// ExitCode of the container.
	ExitCode int32 `json:"exitCode"`
	// Reason given by the runtime (Error, OOMKilled, …).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message the container left (its termination message, e.g. "model dir not found").
	// +optional
	Message string `json:"message,omitempty"`
}

// StepModel is where a step's model came from, as its newest pod's fetch reported (storage cache).
type StepModel struct {
	// URI of the model, without its digest.
	URI string `json:"uri"`
	// Digest of the model's content (sha256:<hex>).
	// +optional
	Digest string `json:"digest,omitempty"`
	// Size of the model on the node.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// CacheHit: the node's cache had the model; nothing was downloaded.
	// +optional
	CacheHit bool `json:"cacheHit,omitempty"`
	// Reason the fetch failed: NotFound, Forbidden, ChecksumMismatch, DiskFull, Unreachable, UnsafeArchive,
	// CorruptArchive, InvalidURI or FetchFailed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says more: why the fetch failed, or that the cache served a model its source could not be asked about.
	// +optional
	Message string `json:"message,omitempty"`
}

// StepStatus is one step as it runs.
type StepStatus struct {
	// Name of the step.
	Name string `json:"name"`
	// Phase of the step.
	Phase Phase `json:"phase"`
	// ReadyReplicas of the step's Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Node the step runs (or must run) on.
	// +optional
	Node string `json:"node,omitempty"`
	// Endpoint of the step: http://<service>.<namespace>.svc:<port>.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Reason is a CamelCase word for why the step is in its phase.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what the step waits for, or what is wrong.
	// +optional
	Message string `json:"message,omitempty"`
	// LastFailure is the last error exit of the step's container.
	// +optional
	LastFailure *Failure `json:"lastFailure,omitempty"`
	// Autoscaler names the HorizontalPodAutoscaler that scales the step's Deployment: the controller then leaves
	// the Deployment's replicas to it, and the step's replicas field is not applied.
	// +optional
	Autoscaler string `json:"autoscaler,omitempty"`
	// Model is where the step's model came from (storage cache).
	// +optional
	Model *StepModel `json:"model,omitempty"`
}

// PipelineStatus is the observed pipeline.
type PipelineStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase: Pending, Progressing, Ready, Degraded, Failed or Deleting.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// DetailPhase is the phase of each object the pipeline is made of.
	// +optional
	DetailPhase DetailPhase `json:"detailPhase,omitempty"`
	// Steps is each step's state.
	// +optional
	// +listType=map
	// +listMapKey=name
	Steps []StepStatus `json:"steps,omitempty"`
	// StepsReady is how many steps are Ready out of all, as "ready/total" (the STEPS column of kubectl get ipl).
	// +optional
	StepsReady string `json:"stepsReady,omitempty"`
	// URL of the entry step.
	// +optional
	URL string `json:"url,omitempty"`
	// Conditions: StorageReady, StepsReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ipl,categories=keelson
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || (size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$'))",optionalOldSelf=true,message="metadata.name must be a DNS-1035 label (at most 63 characters: a lowercase letter first, then lowercase letters, digits and '-', no dots): it names the steps' Services"
// +kubebuilder:printcolumn:name="Steps",type=string,JSONPath=`.status.stepsReady`,description="Steps ready out of all"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the pipeline is not Ready"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Pipeline is a multi-step model-inference pipeline: model storage (a read-only NFS PersistentVolume and claim,
// or an existing claim), and one Deployment and Service per step, pinned to its node and wired to the next steps.
type Pipeline struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired pipeline.
	Spec PipelineSpec `json:"spec"`
	// Status is the observed pipeline, written by the controller.
	// +optional
	Status PipelineStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PipelineList is a list of Pipelines.
type PipelineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Pipelines.
	Items []Pipeline `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &Pipeline{}, &PipelineList{})
}
