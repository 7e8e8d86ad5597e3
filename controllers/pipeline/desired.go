package pipeline

import (
	"context"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// PVName names the models' PersistentVolume. PersistentVolumes are cluster-scoped, so the name carries the
// namespace, and the UID keeps it unique across a pipeline deleted and created again.
func PVName(p *inferencev1alpha1.Pipeline) string {
	return fmt.Sprintf("%s-%s-models-%s", p.Namespace, p.Name, string(p.UID)[:min(8, len(p.UID))])
}

// volumeName is the name of the pipeline's models volume: PVName, or the volume its claim is bound to when that
// claim was made by an earlier pipeline of the same name (deleted with --cascade=orphan, and adopted) and the volume
// carries this pipeline's name and namespace: PVName holds the UID of the pipeline that made it, and a bound claim's
// volume cannot change.
func volumeName(ctx context.Context, c client.Reader, p *inferencev1alpha1.Pipeline) string {
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: ClaimName(p)}, &pvc); err != nil ||
		pvc.Spec.VolumeName == "" || (!ownedBy(&pvc, p) && !orphanOf(&pvc, p)) {
		return PVName(p)
	}
	var pv corev1.PersistentVolume
	if err := c.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil || !ownedBy(&pv, p) {
		return PVName(p)
	}
	return pv.Name
}

// DeploymentStrategy is the strategy of a step's Deployment. A rolling update of a step that asks for GPUs never
// surges: its node's GPUs are usually all held by the step's own pods, so a surge pod would wait forever for a free
// GPU and the rollout would never progress. It replaces one pod at a time instead (maxSurge 0, maxUnavailable 1),
// which frees a GPU before it asks for one.
func DeploymentStrategy(s inferencev1alpha1.Step) appsv1.DeploymentStrategy {
	t := pipelinespec.StepStrategy(s)
	if t != appsv1.RollingUpdateDeploymentStrategyType || !pipelinespec.WantsGPU(s) {
		return appsv1.DeploymentStrategy{Type: t}
	}
	return noSurgeStrategy()
}

// noSurgeStrategy rolls one pod at a time without a surge: maxSurge 0, maxUnavailable 1.
func noSurgeStrategy() appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
}

// Endpoint is the URL of a step's Service. It is known before anything runs, so upstream steps are wired without
// waiting for downstream ones.
func Endpoint(p *inferencev1alpha1.Pipeline, step string, port int32) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", pipelinespec.StepObjectName(p, step), p.Namespace, port)
}

// DesiredPV is the read-only PersistentVolume of an NFS share: Retain (deleting the pipeline never deletes models),
// a unique volume handle, no storage class, pre-bound to the pipeline's claim.
func DesiredPV(p *inferencev1alpha1.Pipeline) *corev1.PersistentVolume {
	return desiredPV(p, PVName(p))
}

// desiredPV is DesiredPV under the name the pipeline's volume has (volumeName).
func desiredPV(p *inferencev1alpha1.Pipeline, name string) *corev1.PersistentVolume {
	ms := p.Spec.ModelStorage
	capacity := resource.MustParse("10Gi")
	if ms.Capacity != nil {
		capacity = *ms.Capacity
	}
	readOnly := ptr.Deref(ms.ReadOnly, true)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: pipelineLabels(p)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			MountOptions:                  ms.MountOptions,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: p.Namespace, Name: ClaimName(p)},
		},
	}
	if ptr.Deref(ms.CSI, true) {
		driver := ms.Driver
		if driver == "" {
			driver = pipelinespec.DefaultDriver
		}
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, ReadOnly: readOnly,
			VolumeHandle:     fmt.Sprintf("%s#%s#%s", ms.CSIParameter["server"], ms.CSIParameter["share"], name),
			VolumeAttributes: ms.CSIParameter}
	} else {
		pv.Spec.NFS = &corev1.NFSVolumeSource{Server: ms.CSIParameter["server"], Path: ms.CSIParameter["share"], ReadOnly: readOnly}
	}
	return pv
}

// DesiredPVC is the claim pre-bound to the PersistentVolume (volumeName), with the empty storage class so no
// provisioner takes it.
func DesiredPVC(p *inferencev1alpha1.Pipeline) *corev1.PersistentVolumeClaim {
	return desiredPVC(p, DesiredPV(p))
}

// desiredPVC is DesiredPVC bound to pv.
func desiredPVC(p *inferencev1alpha1.Pipeline, pv *corev1.PersistentVolume) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimName(p), Namespace: p.Namespace, Labels: pipelineLabels(p),
			OwnerReferences: []metav1.OwnerReference{ownerRef(p)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}},
		},
	}
}

// stepLabels are a step's labels, on its Deployment, its pods and its Service: the short pipeline and step labels,
// and Keelson's. Each names the step by its name, never by its index: an index changes whenever another step is
// added, removed or moved, and a changed label would roll the step (on its pods) or rewrite its Deployment.
func stepLabels(p *inferencev1alpha1.Pipeline, i int) map[string]string {
	l := pipelineLabels(p)
	name := pipelinespec.StepName(p.Spec.Steps, i)
	l[StepShortLabel] = name
	l[inferencev1alpha1.StepLabel] = name
	return l
}

// keepShortStepLabel keeps the short step label an existing Deployment was created with, on it and on its pod
// template: a pod template label changed rolls the step, and a Deployment's labels go into the hash it is applied
// under. Deployments made before the label named the step carry the step's index at their creation; they keep
// it, so upgrading restarts no step.
func keepShortStepLabel(existing, desired client.Object) {
	have, ok1 := existing.(*appsv1.Deployment)
	want, ok2 := desired.(*appsv1.Deployment)
	if !ok1 || !ok2 {
		return
	}
	for _, pair := range [][2]map[string]string{{have.Labels, want.Labels}, {have.Spec.Template.Labels, want.Spec.Template.Labels}} {
		if v, ok := pair[0][StepShortLabel]; ok && pair[1] != nil {
			pair[1][StepShortLabel] = v
		}
	}
}

// DesiredDeployment is step i's Deployment: its image with sorted --key=value args, its model at /models (the
// pipeline's storage or a claim of the namespace, mounted read-only with the model's path as sub-path, or a URI's
// model fetched into the cache on its node by an init container: fetch), the wiring env, the step's readiness probe (StepReadinessProbe), and a
// required node affinity on its node's hostname (never spec.nodeName, which would bypass the scheduler).
func DesiredDeployment(p *inferencev1alpha1.Pipeline, i int, w pipelinespec.Wiring, fetch ModelFetch) *appsv1.Deployment {
	s := p.Spec.Steps[i]
	name := pipelinespec.StepName(p.Spec.Steps, i)
	port := pipelinespec.StepPort(s)
	env := []corev1.EnvVar{
		{Name: pipelinespec.EnvPipelineName, Value: p.Name},
		{Name: pipelinespec.EnvStepName, Value: name},
		{Name: pipelinespec.EnvModelPath, Value: ModelsMountPath},
	}
	var urls []string
	for _, next := range w[name] {
		urls = append(urls, Endpoint(p, next, pipelinespec.StepPort(p.Spec.Steps[indexOf(p.Spec.Steps, next)])))
	}
	switch len(urls) {
	case 0:
	case 1:
		env = append(env, corev1.EnvVar{Name: pipelinespec.EnvNextStepURL, Value: urls[0]})
	default:
		env = append(env, corev1.EnvVar{Name: pipelinespec.EnvNextStepURLs, Value: strings.Join(urls, ",")})
	}
	env = append(env, s.Env...)

	pod := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "server", Image: s.Image, Args: pipelinespec.SortedArgs(s.Args), Env: env, Resources: s.Resources,
			Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: port}},
			ReadinessProbe: StepReadinessProbe(s),
		}},
		Tolerations: s.Tolerations,
	}
	switch pipelinespec.SourceOf(s.Model) {
	case pipelinespec.ModelOnStorage:
		withStorageModel(&pod, p, s)
	case pipelinespec.ModelOnClaim:
		withClaimModel(&pod, s)
	case pipelinespec.ModelFetched:
		withModelCache(&pod, p, s, fetch)
	}
	if s.Location != "" {
		pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: pipelinespec.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{s.Location}}}}}}}}
	}
	l := stepLabels(p, i)
	selector := map[string]string{inferencev1alpha1.PipelineLabel: p.Name, inferencev1alpha1.StepLabel: name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: pipelinespec.StepObjectName(p, name), Namespace: p.Namespace, Labels: l,
			OwnerReferences: []metav1.OwnerReference{ownerRef(p)}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(s.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Strategy: DeploymentStrategy(s),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(l)}, Spec: pod},
		},
	}
}

// DesiredService is step i's Service, in front of its pods on its port.
func DesiredService(p *inferencev1alpha1.Pipeline, i int) *corev1.Service {
	name := pipelinespec.StepName(p.Spec.Steps, i)
	port := pipelinespec.StepPort(p.Spec.Steps[i])
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: pipelinespec.StepObjectName(p, name), Namespace: p.Namespace, Labels: stepLabels(p, i),
			OwnerReferences: []metav1.OwnerReference{ownerRef(p)}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{inferencev1alpha1.PipelineLabel: p.Name, inferencev1alpha1.StepLabel: name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
}

func indexOf(steps []inferencev1alpha1.Step, name string) int {
	for i := range steps {
		if pipelinespec.StepName(steps, i) == name {
			return i
		}
	}
	return 0
}

// stepOf finds a step's status by name.
func stepOf(st inferencev1alpha1.PipelineStatus, name string) (inferencev1alpha1.StepStatus, bool) {
	for _, s := range st.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return inferencev1alpha1.StepStatus{}, false
}
