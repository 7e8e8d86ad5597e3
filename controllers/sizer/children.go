package sizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

func ingressHash(wls *sizerv1alpha1.WorkloadSizer) string {
	b, _ := json.Marshal(struct {
		Ingress *sizerv1alpha1.IngressExpose
		Port    int32
	}{wls.Spec.Expose.Ingress, wls.Spec.Expose.Service.Port})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// A PodDisruptionBudget, Service or Ingress the sizer keeps is named after the target, which is what users look
// for, and so what they may have made themselves. The sizer creates only what does not exist, and never writes to,
// takes over or deletes an object it did not create: it reports it in the Conflict condition instead.

// claim reads the child of obj's kind and key and says whether it is the sizer's. The cache holds only objects with
// the sizer's label, so "not there" is checked again against the apiserver before anything is created: a user's
// object of that name then shows up as foreign. exists is false when there is no object of that name at all.
func (r *Reconciler) claim(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, key types.NamespacedName, obj client.Object,
	creating bool) (exists, ours bool, err error) {
	err = r.Get(ctx, key, obj)
	if client.IgnoreNotFound(err) != nil {
		return false, false, err
	}
	if err != nil && creating {
		err = r.APIReader.Get(ctx, key, obj)
		if client.IgnoreNotFound(err) != nil {
			return false, false, err
		}
	}
	if err != nil {
		return false, false, nil
	}
	if orphanOf(obj, wls) {
		if err := r.adopt(ctx, wls, obj); err != nil {
			return true, false, err
		}
	}
	return true, metav1.IsControlledBy(obj, wls), nil
}

// notOwned is the conflict of a child name taken by an object the sizer did not create.
func notOwned(kind, name, field string) conflict {
	return conflict{reason: sizerv1alpha1.ReasonObjectNotOwned, message: fmt.Sprintf(
		"%s %s exists and was not created by this sizer: it is left untouched (rename or delete it, or unset %s)",
		kind, name, field)}
}

// overlappingBudget returns the name of a PodDisruptionBudget, not the sizer's, that selects pods with the
// target's template labels, or "".
func overlappingBudget(pdbs []policyv1.PodDisruptionBudget, wls *sizerv1alpha1.WorkloadSizer, podLabels map[string]string) string {
	for i := range pdbs {
		p := &pdbs[i]
		if metav1.IsControlledBy(p, wls) || p.Spec.Selector == nil || p.DeletionTimestamp != nil {
			continue // a nil selector selects nothing in policy/v1; an empty one selects every pod
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err == nil && sel.Matches(labels.Set(podLabels)) {
			return p.Name
		}
	}
	return ""
}

// syncBudget keeps the PodDisruptionBudget the decision asks for, and only that.
func (r *Reconciler) syncBudget(ctx context.Context, p *pass, t *target, replicas int32) error {
	wls, st := p.wls, p.status
	d := decidePDB(wls.Spec.Disruption, replicas)
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	st.DisruptionBudget = nil
	if d.create {
		var all policyv1.PodDisruptionBudgetList
		if err := r.List(ctx, &all, client.InNamespace(wls.Namespace)); err != nil {
			return fmt.Errorf("listing disruption budgets: %w", err)
		}
		if other := overlappingBudget(all.Items, wls, t.template.Labels); other != "" {
			p.conflicts = append(p.conflicts, conflict{reason: sizerv1alpha1.ReasonBudgetOverlap, message: fmt.Sprintf(
				"PodDisruptionBudget %s already selects the pods of %s %s: the sizer adds no second budget (every "+
					"eviction would fail); unset spec.disruption or delete that budget", other, wls.Target().Kind, wls.Target().Name)})
			d = pdbDecision{safe: true, reason: sizerv1alpha1.ReasonBudgetNotRequested, message: fmt.Sprintf(
				"PodDisruptionBudget %s, not the sizer's, governs the pods", other)}
		}
	}
	setCondition(st, wls.Generation, sizerv1alpha1.ConditionBudgetSafe, d.safe, d.reason, d.message)

	var existing policyv1.PodDisruptionBudget
	exists, ours, err := r.claim(ctx, wls, key, &existing, d.create)
	if err != nil {
		return err
	}
	if exists && !ours {
		if d.create {
			p.conflicts = append(p.conflicts, notOwned("PodDisruptionBudget", key.Name, "spec.disruption"))
			p.retryLater = true
		}
		return nil
	}
	if !d.create {
		if exists {
			return deleteOurs(ctx, r.Client, &existing)
		}
		return nil
	}
	if !exists || !budgetMatches(&existing, t.selector, d) {
		var want policyv1.PodDisruptionBudget
		if err := typed(newPDB(wls, t.selector, d), &want); err != nil {
			return err
		}
		if err := r.writeChild(ctx, p, &existing, exists, &want, "PodDisruptionBudget", "spec.disruption", func() {
			existing.Spec = want.Spec
		}); err != nil {
			return fmt.Errorf("writing the disruption budget: %w", err)
		}
	}
	st.DisruptionBudget = &sizerv1alpha1.DisruptionBudgetStatus{Name: key.Name, DisruptionsAllowed: existing.Status.DisruptionsAllowed}
	return nil
}

func budgetMatches(pdb *policyv1.PodDisruptionBudget, selector *metav1.LabelSelector, d pdbDecision) bool {
	return equality.Semantic.DeepEqual(pdb.Spec.Selector, selector) &&
		equality.Semantic.DeepEqual(pdb.Spec.MinAvailable, d.minAvailable) &&
		equality.Semantic.DeepEqual(pdb.Spec.MaxUnavailable, d.maxUnavailable) &&
		pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
}

// syncExpose keeps the Service and Ingress the spec asks for, and deletes its own ones it no longer asks for.
func (r *Reconciler) syncExpose(ctx context.Context, p *pass, t *target) error {
	wls := p.wls
	wantService := wls.Spec.Expose != nil && wls.Spec.Expose.Service != nil && wls.Spec.Expose.Service.Enabled
	wantIngress := wantService && wls.Spec.Expose.Ingress != nil && wls.Spec.Expose.Ingress.Enabled
	if err := r.syncService(ctx, p, serviceSelector(t.selector, t.template.Labels), wantService); err != nil {
		return err
	}
	return r.syncIngress(ctx, p, wantIngress)
}

// syncService keeps the Service the spec asks for (want), or deletes its own one.
func (r *Reconciler) syncService(ctx context.Context, p *pass, selector map[string]string, want bool) error {
	wls := p.wls
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	var svc corev1.Service
	exists, ours, err := r.claim(ctx, wls, key, &svc, want)
	if err != nil {
		return err
	}
	switch {
	case exists && !ours:
		if want {
			p.conflicts = append(p.conflicts, notOwned("Service", key.Name, "spec.expose.service"))
			p.retryLater = true
		}
	case want && (!exists || !serviceMatches(&svc, wls, selector)):
		var desired corev1.Service
		if err := typed(newService(wls, selector), &desired); err != nil {
			return err
		}
		if err := r.writeChild(ctx, p, &svc, exists, &desired, "Service", "spec.expose.service", func() {
			// Only what the sizer decides: the cluster IP and node ports the apiserver allocated stay.
			svc.Spec.Type, svc.Spec.Selector, svc.Spec.Ports = desired.Spec.Type, desired.Spec.Selector, desired.Spec.Ports
		}); err != nil {
			return fmt.Errorf("writing the Service: %w", err)
		}
	case !want && exists:
		return deleteOurs(ctx, r.Client, &svc)
	}
	return nil
}

// syncIngress keeps the Ingress the spec asks for (want), or deletes its own one.
func (r *Reconciler) syncIngress(ctx context.Context, p *pass, want bool) error {
	wls := p.wls
	key := types.NamespacedName{Namespace: wls.Namespace, Name: childName(wls)}
	var ing networkingv1.Ingress
	exists, ours, err := r.claim(ctx, wls, key, &ing, want)
	if err != nil {
		return err
	}
	switch {
	case exists && !ours:
		if want {
			p.conflicts = append(p.conflicts, notOwned("Ingress", key.Name, "spec.expose.ingress"))
			p.retryLater = true
		}
	case want && (!exists || ing.Annotations[specHashAnnotation] != ingressHash(wls)):
		var desired networkingv1.Ingress
		if err := typed(newIngress(wls).WithAnnotations(map[string]string{specHashAnnotation: ingressHash(wls)}), &desired); err != nil {
			return err
		}
		if err := r.writeChild(ctx, p, &ing, exists, &desired, "Ingress", "spec.expose.ingress", func() {
			ing.Spec = desired.Spec
			if ing.Annotations == nil {
				ing.Annotations = map[string]string{}
			}
			ing.Annotations[specHashAnnotation] = desired.Annotations[specHashAnnotation]
		}); err != nil {
			return fmt.Errorf("writing the Ingress: %w", err)
		}
	case !want && exists:
		return deleteOurs(ctx, r.Client, &ing)
	}
	return nil
}

// writeChild creates want when no object of its name exists, or updates the sizer's own existing object through
// mutate. Creation is a Create, never an apply: an object of someone else's that appeared since the sizer looked
// makes it fail with AlreadyExists, and is then reported, instead of being taken over (an apply would have merged
// into it, with the sizer's owner reference). An update carries the resourceVersion read, so it cannot overwrite a
// change it has not seen.
func (r *Reconciler) writeChild(ctx context.Context, p *pass, existing client.Object, exists bool, want client.Object,
	kind, field string, mutate func()) error {
	if !exists {
		err := r.Create(ctx, want, client.FieldOwner(FieldOwner))
		if apierrors.IsAlreadyExists(err) {
			p.conflicts = append(p.conflicts, notOwned(kind, want.GetName(), field))
			p.retryLater = true
			return nil
		}
		return err
	}
	mutate()
	existing.SetLabels(want.GetLabels())
	existing.SetOwnerReferences(want.GetOwnerReferences())
	return r.Update(ctx, existing, client.FieldOwner(FieldOwner))
}

// deleteOurs deletes one of the sizer's own objects, on the condition that it is still the one read: a user's
// object made under the same name since then is not deleted in its place.
func deleteOurs(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	return client.IgnoreNotFound(c.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// typed converts an apply configuration into the typed object it describes (they share one JSON form).
func typed(ac any, into client.Object) error {
	b, err := json.Marshal(ac)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("converting %T: %w", into, err)
	}
	return nil
}

func serviceMatches(svc *corev1.Service, wls *sizerv1alpha1.WorkloadSizer, selector map[string]string) bool {
	s := wls.Spec.Expose.Service
	return equality.Semantic.DeepEqual(svc.Spec.Selector, selector) && svc.Spec.Type == s.Type &&
		len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == s.Port && svc.Spec.Ports[0].TargetPort.IntVal == servicePort(s)
}
