package sizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// Names and labels of what the sizer writes.
const (
	// FieldOwner is the server-side apply field manager of what the sizer owns outright: a target it created, its
	// PodDisruptionBudget, Service and Ingress. Fields of a workload it did not create are applied under a field
	// manager of their own per sizer (workloadFieldOwner).
	FieldOwner = sizerv1alpha1.FieldManager
)

// maxFieldManagerLength is the apiserver's limit on a field manager's name.
const maxFieldManagerLength = 128

// workloadFieldOwner is the field manager of one sizer's writes to a workload it did not create. One per sizer, so
// that two sizers writing one field meet as a server-side apply conflict instead of silently taking turns, and so
// that a sizer's deletion releases exactly its own fields. Long names are shortened with a hash to fit the limit.
func workloadFieldOwner(wls *sizerv1alpha1.WorkloadSizer) string {
	name := FieldOwner + "/" + wls.Name
	if len(name) <= maxFieldManagerLength {
		return name
	}
	sum := sha256.Sum256([]byte(wls.Name))
	suffix := "-" + hex.EncodeToString(sum[:8])
	return name[:maxFieldManagerLength-len(suffix)] + suffix
}

// containerPatch is what the sizer writes into one container: resources (when they go to the template) and env.
type containerPatch struct {
	name      string
	resources *sizerv1alpha1.AppliedResources
	env       []corev1.EnvVar
}

// ownedLabels are the labels on everything the sizer creates.
func ownedLabels(wls *sizerv1alpha1.WorkloadSizer) map[string]string {
	l := commonlabels.Set()
	l[sizerv1alpha1.NameLabel] = wls.Name
	return l
}

func ownerRef(wls *sizerv1alpha1.WorkloadSizer) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().WithAPIVersion(sizerv1alpha1.GroupVersion.String()).WithKind("WorkloadSizer").
		WithName(wls.Name).WithUID(wls.UID).WithController(true).WithBlockOwnerDeletion(true)
}

// containerAC is the apply configuration of one container patch: its name plus only the fields the sizer owns.
func containerAC(p containerPatch) *corev1ac.ContainerApplyConfiguration {
	c := corev1ac.Container().WithName(p.name)
	if p.resources != nil {
		rr := corev1ac.ResourceRequirements()
		if p.resources.Requests != nil {
			rr.WithRequests(p.resources.Requests)
		}
		if p.resources.Limits != nil {
			rr.WithLimits(p.resources.Limits)
		}
		c.WithResources(rr)
	}
	for _, e := range p.env {
		c.WithEnv(corev1ac.EnvVar().WithName(e.Name).WithValue(e.Value))
	}
	return c
}

// podSpecPatch is the template spec of a patch: only the containers the sizer writes to.
func podSpecPatch(patches []containerPatch) *corev1ac.PodTemplateSpecApplyConfiguration {
	spec := corev1ac.PodSpec()
	for _, p := range patches {
		spec.WithContainers(containerAC(p))
	}
	return corev1ac.PodTemplateSpec().WithSpec(spec)
}

// deploymentPatch is the apply configuration of an existing Deployment: replicas (when sized) and the container
// patches. Nothing else, so other field managers keep what they own.
func deploymentPatch(namespace, name string, replicas *int32, patches []containerPatch) *appsv1ac.DeploymentApplyConfiguration {
	spec := appsv1ac.DeploymentSpec()
	if replicas != nil {
		spec.WithReplicas(*replicas)
	}
	if len(patches) > 0 {
		spec.WithTemplate(podSpecPatch(patches))
	}
	return appsv1ac.Deployment(name, namespace).WithSpec(spec)
}

// statefulSetPatch is deploymentPatch for a StatefulSet.
func statefulSetPatch(namespace, name string, replicas *int32, patches []containerPatch) *appsv1ac.StatefulSetApplyConfiguration {
	spec := appsv1ac.StatefulSetSpec()
	if replicas != nil {
		spec.WithReplicas(*replicas)
	}
	if len(patches) > 0 {
		spec.WithTemplate(podSpecPatch(patches))
	}
	return appsv1ac.StatefulSet(name, namespace).WithSpec(spec)
}

// createdTemplate is the pod template of a target the sizer creates: spec.template, or one "app" container of
// spec.image, labelled so the target's selector finds its pods.
func createdTemplate(wls *sizerv1alpha1.WorkloadSizer) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	if wls.Spec.Template != nil {
		t = *wls.Spec.Template.DeepCopy()
	} else {
		t.Spec.Containers = []corev1.Container{{Name: sizerv1alpha1.DefaultContainerName, Image: wls.Spec.Image}}
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[sizerv1alpha1.NameLabel] = wls.Name
	return t
}

// templateAC converts a pod template into its apply configuration (they share one JSON form), with the container
// patches merged in.
func templateAC(t corev1.PodTemplateSpec, patches []containerPatch) (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	for _, p := range patches {
		for i := range t.Spec.Containers {
			c := &t.Spec.Containers[i]
			if c.Name != p.name {
				continue
			}
			if p.resources != nil {
				c.Resources.Requests = mergeResources(c.Resources.Requests, p.resources.Requests)
				c.Resources.Limits = mergeResources(c.Resources.Limits, p.resources.Limits)
			}
			c.Env = mergeEnv(c.Env, p.env)
		}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	ac := &corev1ac.PodTemplateSpecApplyConfiguration{}
	if err := json.Unmarshal(b, ac); err != nil {
		return nil, fmt.Errorf("converting the pod template: %w", err)
	}
	return ac, nil
}

// mergeResources sets each of add in list, keeping the template's other resources: a resources entry sizing the cpu
// of a container the template gives a memory request keeps that request, as it does on a user's workload (where
// server-side apply merges the two by key).
func mergeResources(list, add corev1.ResourceList) corev1.ResourceList {
	if len(add) == 0 {
		return list
	}
	out := list.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range add {
		out[name] = q
	}
	return out
}

// mergeEnv sets each of add in env, replacing a variable of the same name.
func mergeEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	out := append([]corev1.EnvVar(nil), env...)
	for _, a := range add {
		replaced := false
		for i := range out {
			if out[i].Name == a.Name {
				out[i], replaced = a, true
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}

// newDeployment is the whole Deployment a sizer creates and owns.
func newDeployment(wls *sizerv1alpha1.WorkloadSizer, replicas *int32, patches []containerPatch) (*appsv1ac.DeploymentApplyConfiguration, error) {
	t, err := templateAC(createdTemplate(wls), patches)
	if err != nil {
		return nil, err
	}
	spec := appsv1ac.DeploymentSpec().WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{sizerv1alpha1.NameLabel: wls.Name})).
		WithTemplate(t)
	if replicas != nil {
		spec.WithReplicas(*replicas)
	}
	return appsv1ac.Deployment(wls.Target().Name, wls.Namespace).WithLabels(ownedLabels(wls)).
		WithOwnerReferences(ownerRef(wls)).WithSpec(spec), nil
}

// newStatefulSet is the whole StatefulSet a sizer creates and owns.
func newStatefulSet(wls *sizerv1alpha1.WorkloadSizer, replicas *int32, patches []containerPatch) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	t, err := templateAC(createdTemplate(wls), patches)
	if err != nil {
		return nil, err
	}
	spec := appsv1ac.StatefulSetSpec().WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{sizerv1alpha1.NameLabel: wls.Name})).
		WithTemplate(t)
	if replicas != nil {
		spec.WithReplicas(*replicas)
	}
	return appsv1ac.StatefulSet(wls.Target().Name, wls.Namespace).WithLabels(ownedLabels(wls)).
		WithOwnerReferences(ownerRef(wls)).WithSpec(spec), nil
}

// childName names the PDB, Service and Ingress the sizer owns: the target's name, which is what users look for.
func childName(wls *sizerv1alpha1.WorkloadSizer) string { return wls.Target().Name }

// newPDB is the PodDisruptionBudget for the target's pods, evicting unhealthy pods always (so a crash-looping pod
// never holds a drain hostage).
func newPDB(wls *sizerv1alpha1.WorkloadSizer, selector *metav1.LabelSelector, d pdbDecision) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	spec := policyv1ac.PodDisruptionBudgetSpec().WithSelector(labelSelectorAC(selector)).
		WithUnhealthyPodEvictionPolicy("AlwaysAllow")
	if d.minAvailable != nil {
		spec.WithMinAvailable(*d.minAvailable)
	} else {
		spec.WithMaxUnavailable(*d.maxUnavailable)
	}
	return policyv1ac.PodDisruptionBudget(childName(wls), wls.Namespace).WithLabels(ownedLabels(wls)).
		WithOwnerReferences(ownerRef(wls)).WithSpec(spec)
}

func labelSelectorAC(s *metav1.LabelSelector) *metav1ac.LabelSelectorApplyConfiguration {
	ac := metav1ac.LabelSelector()
	if len(s.MatchLabels) > 0 {
		ac.WithMatchLabels(s.MatchLabels)
	}
	for _, e := range s.MatchExpressions {
		ac.WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(e.Key).
			WithOperator(e.Operator).WithValues(e.Values...))
	}
	return ac
}

// serviceSelector is what the Service selects: the target's own selector, so the Service reaches exactly the
// target's pods (a template label shared with other workloads, or one that changes with every release, would
// reach too many or too few). A selector with expressions cannot be a Service's: then the template's labels.
func serviceSelector(selector *metav1.LabelSelector, template map[string]string) map[string]string {
	if selector != nil && len(selector.MatchLabels) > 0 && len(selector.MatchExpressions) == 0 {
		return selector.MatchLabels
	}
	return template
}

// newService is the Service in front of the target's pods.
func newService(wls *sizerv1alpha1.WorkloadSizer, podLabels map[string]string) *corev1ac.ServiceApplyConfiguration {
	s := wls.Spec.Expose.Service
	return corev1ac.Service(childName(wls), wls.Namespace).WithLabels(ownedLabels(wls)).WithOwnerReferences(ownerRef(wls)).
		WithSpec(corev1ac.ServiceSpec().WithType(s.Type).WithSelector(podLabels).WithPorts(
			corev1ac.ServicePort().WithName("http").WithPort(s.Port).WithTargetPort(intstr.FromInt32(servicePort(s)))))
}

// newIngress routes the host and path to the Service.
func newIngress(wls *sizerv1alpha1.WorkloadSizer) *networkingv1ac.IngressApplyConfiguration {
	in := wls.Spec.Expose.Ingress
	path := in.Path
	if path == "" {
		path = "/"
	}
	rule := networkingv1ac.IngressRule().WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(
		networkingv1ac.HTTPIngressPath().WithPath(path).WithPathType("Prefix").WithBackend(
			networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().WithName(childName(wls)).
				WithPort(networkingv1ac.ServiceBackendPort().WithNumber(wls.Spec.Expose.Service.Port))))))
	if in.Host != "" {
		rule.WithHost(in.Host)
	}
	spec := networkingv1ac.IngressSpec().WithRules(rule)
	if in.ClassName != "" {
		spec.WithIngressClassName(in.ClassName)
	}
	if in.TLSSecretName != "" {
		tls := networkingv1ac.IngressTLS().WithSecretName(in.TLSSecretName)
		if in.Host != "" {
			tls.WithHosts(in.Host)
		}
		spec.WithTLS(tls)
	}
	return networkingv1ac.Ingress(childName(wls), wls.Namespace).WithLabels(ownedLabels(wls)).
		WithOwnerReferences(ownerRef(wls)).WithSpec(spec)
}

// specHashAnnotation records, on a child whose spec is awkward to compare field by field, the hash of what the
// sizer last applied, so a steady state applies nothing.
const specHashAnnotation = "sizer.keelson.dev/spec-hash"

// servicePort is the port on the pods: targetPort, else the Service's own port.
func servicePort(s *sizerv1alpha1.ServiceExpose) int32 {
	if s.TargetPort == 0 {
		return s.Port
	}
	return s.TargetPort
}
