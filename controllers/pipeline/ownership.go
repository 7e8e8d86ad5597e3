package pipeline

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/commonlabels"
)

// Labels and names of what the controller creates.
const (
	// PipelineNameLabel and StepShortLabel are short labels for scripts and selectors typed by hand: the pipeline's
	// name and the step's name.
	PipelineNameLabel = "pipeline"
	StepShortLabel    = "step"
)

// orphanOf reports whether obj is an object p's name made that lost its owner: no controller, not being deleted,
// and the labels the controller puts on what it creates, with p's name (a pipeline deleted with --cascade=orphan
// leaves its Deployments, Services and claims so). The pipeline applied again adopts them, as apps/v1's controllers
// adopt their orphans; a user's object does not carry these labels, so it stays NameTaken.
func orphanOf(obj client.Object, p *inferencev1alpha1.Pipeline) bool {
	if _, ok := obj.(*corev1.PersistentVolume); ok || len(obj.GetOwnerReferences()) > 0 || obj.GetDeletionTimestamp() != nil {
		return false // an object with any owner is someone's
	}
	l := obj.GetLabels()
	return l[inferencev1alpha1.PipelineLabel] == p.Name && l[commonlabels.ManagedBy] == commonlabels.Keelson
}

// ownedBy reports whether obj is p's: controlled by p, or, for the cluster-scoped volume (which cannot have a
// namespaced owner), labelled with p's name and namespace.
func ownedBy(obj client.Object, p *inferencev1alpha1.Pipeline) bool {
	if _, ok := obj.(*corev1.PersistentVolume); ok {
		l := obj.GetLabels()
		return l[inferencev1alpha1.PipelineLabel] == p.Name && l[NamespaceLabel] == p.Namespace
	}
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == p.UID
}

// kindOf names an object's kind for messages.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *corev1.PersistentVolume:
		return "PersistentVolume"
	}
	return fmt.Sprintf("%T", obj)
}

// NamespaceLabel maps the cluster-scoped PersistentVolume back to its pipeline's namespace.
const NamespaceLabel = "inference.keelson.dev/namespace"

func pipelineLabels(p *inferencev1alpha1.Pipeline) map[string]string {
	l := commonlabels.Set()
	l[PipelineNameLabel] = p.Name
	l[inferencev1alpha1.PipelineLabel] = p.Name
	return l
}

func ownerRef(p *inferencev1alpha1.Pipeline) metav1.OwnerReference {
	return *metav1.NewControllerRef(p, inferencev1alpha1.GroupVersion.WithKind("Pipeline"))
}
