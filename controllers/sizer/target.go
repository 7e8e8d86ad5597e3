package sizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// target is a Deployment or StatefulSet seen through what the sizer needs of it.
type target struct {
	obj           client.Object
	replicas      int32 // spec.replicas (defaulted to 1)
	statusReplica int32
	ready         int32
	selector      *metav1.LabelSelector
	template      corev1.PodTemplateSpec
	// created: the sizer created it (it controls it), so the sizer owns all of it.
	created bool
}

// getTarget reads the sizer's target through reader; nil when it does not exist.
func getTarget(ctx context.Context, reader client.Reader, wls *sizerv1alpha1.WorkloadSizer) (*target, error) {
	key := types.NamespacedName{Namespace: wls.Namespace, Name: wls.Spec.TargetRef.Name}
	var t target
	switch wls.Spec.TargetRef.Kind {
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := reader.Get(ctx, key, &s); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		t = target{obj: &s, replicas: ptr.Deref(s.Spec.Replicas, 1), statusReplica: s.Status.Replicas,
			ready:    s.Status.ReadyReplicas,
			selector: s.Spec.Selector, template: s.Spec.Template}
	default:
		var d appsv1.Deployment
		if err := reader.Get(ctx, key, &d); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		t = target{obj: &d, replicas: ptr.Deref(d.Spec.Replicas, 1), statusReplica: d.Status.Replicas,
			ready:    d.Status.ReadyReplicas,
			selector: d.Spec.Selector, template: d.Spec.Template}
	}
	t.created = metav1.IsControlledBy(t.obj, wls)
	return &t, nil
}

// patchesFor decides what to write into each container of template: the bounded resources (when they go to the
// template) and the runtime environment. owned names the env variables the sizer already owns per container.
func patchesFor(wls *sizerv1alpha1.WorkloadSizer, template corev1.PodTemplateSpec, owned map[string]map[string]bool,
	resourcesToTemplate, envToTemplate bool) ([]containerPatch, []sizerv1alpha1.AppliedResources) {
	applied := desiredResources(wls.Spec.Resources, template.Spec.Containers)
	var patches []containerPatch
	for _, c := range template.Spec.Containers {
		p := containerPatch{name: c.Name}
		for i := range applied {
			if applied[i].ContainerName == c.Name && resourcesToTemplate {
				p.resources = &applied[i]
			}
		}
		if envToTemplate {
			p.env = runtimeEnv(wls.Spec.Runtime, effectiveLimits(c, applied), c.Env, owned[c.Name])
		}
		if p.resources != nil || len(p.env) > 0 {
			patches = append(patches, p)
		}
	}
	return patches, applied
}

// templateNeedsWrite reports whether any patch would change the template.
func templateNeedsWrite(template corev1.PodTemplateSpec, patches []containerPatch) bool {
	for _, p := range patches {
		for _, c := range template.Spec.Containers {
			if c.Name != p.name {
				continue
			}
			if p.resources != nil && !resourcesEqual(c, *p.resources) {
				return true
			}
			for _, e := range p.env {
				if !hasEnv(c.Env, e) {
					return true
				}
			}
		}
	}
	return false
}

func hasEnv(env []corev1.EnvVar, want corev1.EnvVar) bool {
	for _, e := range env {
		if e.Name == want.Name {
			return e.Value == want.Value && e.ValueFrom == nil
		}
	}
	return false
}

// applyTarget writes the patches (and replicas) to an existing target with server-side apply.
func (r *Reconciler) applyTarget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, patches []containerPatch) error {
	opts := []client.ApplyOption{client.FieldOwner(FieldOwner)}
	if wls.Spec.ForceOwnership {
		opts = append(opts, client.ForceOwnership)
	}
	var err error
	if wls.Spec.TargetRef.Kind == "StatefulSet" {
		err = r.Apply(ctx, statefulSetPatch(wls.Namespace, wls.Spec.TargetRef.Name, wls.Spec.Size, patches), opts...)
	} else {
		err = r.Apply(ctx, deploymentPatch(wls.Namespace, wls.Spec.TargetRef.Name, wls.Spec.Size, patches), opts...)
	}
	if err != nil {
		return fmt.Errorf("applying to %s %s: %w", wls.Spec.TargetRef.Kind, wls.Spec.TargetRef.Name, err)
	}
	return nil
}

// createdHash fingerprints what the sizer applies to a target it created, so an unchanged spec applies nothing.
func createdHash(wls *sizerv1alpha1.WorkloadSizer, patches []containerPatch) string {
	t, _ := templateAC(createdTemplate(wls), patches)
	b, _ := json.Marshal(struct {
		Template any
		Size     *int32
	}{t, wls.Spec.Size})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// createTarget creates (or updates) the whole target the sizer owns.
func (r *Reconciler) createTarget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, patches []containerPatch) error {
	opts := []client.ApplyOption{client.FieldOwner(FieldOwner), client.ForceOwnership}
	hash := map[string]string{specHashAnnotation: createdHash(wls, patches)}
	if wls.Spec.TargetRef.Kind == "StatefulSet" {
		ac, err := newStatefulSet(wls, patches)
		if err != nil {
			return err
		}
		return r.Apply(ctx, ac.WithAnnotations(hash), opts...)
	}
	ac, err := newDeployment(wls, patches)
	if err != nil {
		return err
	}
	return r.Apply(ctx, ac.WithAnnotations(hash), opts...)
}
