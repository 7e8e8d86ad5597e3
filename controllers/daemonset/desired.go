package daemonset

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// Labels on everything the controller creates.
const (
	// RevisionLabel holds the hash of the revision a pod runs (the key apps/v1 uses, so tools that know it work).
	RevisionLabel = appsv1.DefaultDaemonSetUniqueLabelKey
)

// EffectiveSelector is the DaemonSet's pod selector: spec.selector, or the name label when it is empty (the
// webhook writes that default; the controller applies it too, so a DaemonSet admitted without the webhook works).
func EffectiveSelector(ds *daemonsetv1alpha1.DaemonSet) *metav1.LabelSelector {
	if ds.Spec.Selector != nil && (len(ds.Spec.Selector.MatchLabels) > 0 || len(ds.Spec.Selector.MatchExpressions) > 0) {
		return ds.Spec.Selector
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{daemonsetv1alpha1.NameLabel: ds.Name}}
}

// EffectiveTemplate is the pod template the DaemonSet runs: spec.template with the image shorthand applied (one
// container "app" when there are none; spec.image as the image of a lone "app" container) and restartPolicy Always.
func EffectiveTemplate(ds *daemonsetv1alpha1.DaemonSet) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	switch {
	case len(t.Spec.Containers) == 0:
		t.Spec.Containers = []corev1.Container{{Name: daemonsetv1alpha1.DefaultContainerName, Image: ds.Spec.Image}}
	case ds.Spec.Image != "" && len(t.Spec.Containers) == 1 && t.Spec.Containers[0].Name == daemonsetv1alpha1.DefaultContainerName:
		t.Spec.Containers[0].Image = ds.Spec.Image
	}
	if t.Spec.RestartPolicy == "" {
		t.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if ds.Spec.Selector == nil || (len(ds.Spec.Selector.MatchLabels) == 0 && len(ds.Spec.Selector.MatchExpressions) == 0) {
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[daemonsetv1alpha1.NameLabel] = ds.Name
	}
	return t
}

// usesHostPorts reports whether the pods of spec bind ports on their node: a container with a host port, or any
// container of a host-network pod (whose container ports are host ports). Such a template never surges: the surge
// pod could not bind the ports the old pod holds.
func usesHostPorts(spec *corev1.PodSpec) bool {
	if spec.HostNetwork {
		return true
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					return true
				}
			}
		}
	}
	return false
}

// revisionHash names a template: a short, label-safe hash of it, salted with the collision count so that a
// collision can be resolved by bumping the count.
func revisionHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, _ := json.Marshal(template) // a PodTemplateSpec always marshals
	_, _ = h.Write(b)
	if collisionCount != nil {
		_, _ = fmt.Fprintf(h, "%d", *collisionCount)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// revisionName is the ControllerRevision's name for a hash.
func revisionName(ds *daemonsetv1alpha1.DaemonSet, hash string) string {
	return ds.Name + "-" + hash
}

// ownedLabels are the labels every child of ds carries.
func ownedLabels(ds *daemonsetv1alpha1.DaemonSet) map[string]string {
	l := commonlabels.Set()
	l[daemonsetv1alpha1.NameLabel] = ds.Name
	return l
}

// ownerReference makes ds the controlling owner, so the garbage collector removes its children with it.
func ownerReference(ds *daemonsetv1alpha1.DaemonSet) metav1.OwnerReference {
	return *metav1.NewControllerRef(ds, daemonsetv1alpha1.GroupVersion.WithKind("DaemonSet"))
}

// newRevision is the ControllerRevision that records template under hash, numbered number.
func newRevision(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, hash string, number int64) *appsv1.ControllerRevision {
	labels := ownedLabels(ds)
	labels[RevisionLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            revisionName(ds, hash),
			Namespace:       ds.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{ownerReference(ds)},
		},
		Data:     runtime.RawExtension{Raw: revisionData(template)},
		Revision: number,
	}
}

// revisionData is what a ControllerRevision records of template, in the one form that survives the apiserver's
// round trip unchanged: a revision's data is immutable, and the apiserver compares it byte for byte when it applies
// a patch to the revision's metadata (the garbage collector's, when it orphans the revision). A strategic merge patch
// passes the object through unstructured form, which sorts object keys and writes integers as integers; data written
// in any other form (a struct's field order, say) then reads as changed, the patch is refused, and an orphan delete
// of the DaemonSet never completes. apps/v1 writes its revisions the same way.
func revisionData(template *corev1.PodTemplateSpec) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": template}}) // a PodTemplateSpec always marshals
	return canonicalJSON(b)
}

// canonicalJSON rewrites b as the apiserver's unstructured round trip does: keys sorted, integers as int64. b that
// is not JSON is returned as it is.
func canonicalJSON(b []byte) []byte {
	var generic any
	if err := utiljson.Unmarshal(b, &generic); err != nil {
		return b
	}
	out, err := json.Marshal(generic)
	if err != nil {
		return b
	}
	return out
}

// templateOfRevision decodes the template a ControllerRevision recorded.
func templateOfRevision(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decoding revision %s: %w", rev.Name, err)
	}
	return &data.Spec.Template, nil
}

// newPod is the pod of template (revision hash) for node: the template's labels plus Keelson's, the daemon
// tolerations, and a required node affinity on the node's name that replaces the template's required terms (the
// controller has already checked those against the node), so the scheduler places it on exactly that node. It never
// sets spec.nodeName, which would bypass the scheduler's resource and port checks. While ds allows updates in
// place with their readiness gate, the pod carries the gate InPlaceReadyCondition.
func newPod(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, hash, node string) *corev1.Pod {
	spec := template.Spec.DeepCopy()
	if inPlaceGated(ds) {
		// Readiness gates cannot be added to a running pod: a pod gets the gate an update in place needs now.
		spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: InPlaceReadyCondition})
	}
	spec.Tolerations = withDaemonTolerations(spec.Tolerations, spec.HostNetwork)
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          podLabels(ds, template, hash),
			Annotations:     maps.Clone(template.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerReference(ds)},
		},
		Spec: *spec,
	}
}

// podLabels are the labels of ds's pods of template at revision hash: the template's, then the controller's own.
func podLabels(ds *daemonsetv1alpha1.DaemonSet, template *corev1.PodTemplateSpec, hash string) map[string]string {
	labels := maps.Clone(template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, ownedLabels(ds))
	labels[RevisionLabel] = hash
	return labels
}

// PodNode is the node a pod runs on or is pinned to: spec.nodeName once scheduled, else the node name in the
// required node affinity newPod wrote. Empty when neither says.
func PodNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// revisionHistoryLimit is spec.revisionHistoryLimit with its default.
func revisionHistoryLimit(ds *daemonsetv1alpha1.DaemonSet) int {
	return int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))
}

// InPlaceReadyCondition is the readiness gate of pods created while in-place updates are allowed. The controller
// sets it False just before it updates a pod in place, so Services stop sending it traffic before the kubelet stops
// its containers, and True again once the updated containers run and are ready (and right after the pod starts).
const InPlaceReadyCondition corev1.PodConditionType = "daemonset.keelson.dev/in-place-ready"

// inPlaceGated reports whether ds's new pods carry the in-place readiness gate: its rolling update may update pods
// in place, and the gate is not disabled.
func inPlaceGated(ds *daemonsetv1alpha1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ds.Spec.UpdateStrategy.Type != daemonsetv1alpha1.OnDeleteStrategyType && ru != nil &&
		ru.InPlace == daemonsetv1alpha1.InPlaceIfPossible && ru.InPlaceReadinessGate != daemonsetv1alpha1.InPlaceReadinessGateDisabled
}
