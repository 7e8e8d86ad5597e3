package sizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	// problem is the workload's own report that it cannot create or roll out its pods, or nil.
	problem *rolloutProblem
}

// getTarget reads the sizer's target through reader; nil when it does not exist.
func getTarget(ctx context.Context, reader client.Reader, wls *sizerv1alpha1.WorkloadSizer) (*target, error) {
	ref := wls.Target()
	key := types.NamespacedName{Namespace: wls.Namespace, Name: ref.Name}
	var t target
	switch ref.Kind {
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
			selector: d.Spec.Selector, template: d.Spec.Template, problem: deploymentProblem(&d)}
	}
	t.created = metav1.IsControlledBy(t.obj, wls)
	return &t, nil
}

// deploymentProblem reads a Deployment's conditions for a failure to create pods (ReplicaFailure, set when a quota
// or an admission webhook refuses them) or a rollout past its progress deadline.
func deploymentProblem(d *appsv1.Deployment) *rolloutProblem {
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return &rolloutProblem{reason: sizerv1alpha1.ReasonReplicaFailure, message: fmt.Sprintf("Deployment %s cannot create pods: %s",
				d.Name, c.Message)}
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return &rolloutProblem{reason: sizerv1alpha1.ReasonProgressDeadline, message: fmt.Sprintf("Deployment %s: %s", d.Name, c.Message)}
		}
	}
	return nil
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

// targetWrite is one pass's write to the target: the apply configuration, the field manager it is applied as,
// whether it is forced, and whether it changes anything at all.
type targetWrite struct {
	ac     runtime.ApplyConfiguration // of a Deployment or a StatefulSet
	owner  string
	force  bool
	needed bool
}

// workloadWrite is what the sizer applies to a target it did not create: replicas (when it sizes them) and the
// container patches, nothing else, so other field managers keep what they own.
func workloadWrite(wls *sizerv1alpha1.WorkloadSizer, t *target, replicas *int32, patches []containerPatch) targetWrite {
	ref := wls.Target()
	w := targetWrite{owner: workloadFieldOwner(wls), force: wls.Spec.ForceOwnership,
		needed: (replicas != nil && *replicas != t.replicas) || templateNeedsWrite(t.template, patches)}
	if ref.Kind == "StatefulSet" {
		w.ac = statefulSetPatch(wls.Namespace, ref.Name, replicas, patches)
	} else {
		w.ac = deploymentPatch(wls.Namespace, ref.Name, replicas, patches)
	}
	return w
}

// createdWrite is the whole target the sizer creates and owns, with a hash of itself so an unchanged spec applies
// nothing. t is nil when the target does not exist yet.
func createdWrite(wls *sizerv1alpha1.WorkloadSizer, t *target, replicas *int32, patches []containerPatch) (targetWrite, error) {
	hash := createdHash(wls, replicas, patches)
	w := targetWrite{owner: FieldOwner, force: true}
	if t == nil {
		w.needed = true
	} else {
		w.needed = (replicas != nil && *replicas != t.replicas) || templateNeedsWrite(t.template, patches) ||
			t.obj.GetAnnotations()[specHashAnnotation] != hash
	}
	annotations := map[string]string{specHashAnnotation: hash}
	if wls.Target().Kind == "StatefulSet" {
		ac, err := newStatefulSet(wls, replicas, patches)
		if err != nil {
			return w, err
		}
		w.ac = ac.WithAnnotations(annotations)
		return w, nil
	}
	ac, err := newDeployment(wls, replicas, patches)
	if err != nil {
		return w, err
	}
	w.ac = ac.WithAnnotations(annotations)
	return w, nil
}

// createdHash fingerprints what the sizer applies to a target it created, so an unchanged spec applies nothing.
func createdHash(wls *sizerv1alpha1.WorkloadSizer, replicas *int32, patches []containerPatch) string {
	t, _ := templateAC(createdTemplate(wls), patches)
	b, _ := json.Marshal(struct {
		Template any
		Size     *int32
	}{t, replicas})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// writeTarget hands over the fields the sizer no longer applies, then applies w when it changes anything. owned
// is what the sizer owns on the target as far as this process knows (the cache's managedFields entry and its own
// last apply); it decides whether a hand-over is needed at all, and the hand-over itself re-reads the target from
// the apiserver.
func (r *Reconciler) writeTarget(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, t *target, w targetWrite) error {
	applying := appliedFields(w.ac)
	key := client.ObjectKeyFromObject(wls).String()
	if t != nil {
		last, seen := r.appliedRecord(key)
		owned := ownedFields(t.obj, w.owner, FieldOwner).union(last)
		legacy := !t.created && hasEntryOf(t.obj, FieldOwner)
		// A process's first write to a workload (a new leader's, say) must not trust a cache that may lag the last
		// writes: when this apply leaves out fields a sizer commonly gives up (replicas, or all of the template's),
		// the hand-over decides from the apiserver's copy.
		unsure := !seen && (!applying.replicas || (countLeaves(applying.resources) == 0 && countLeaves(applying.env) == 0))
		released := owned.minus(applying)
		if !derivedEnv(released).empty() {
			w.needed = true // the apply that leaves them out removes the variables the sizer no longer derives
		}
		if !toHandOver(released, t.created).empty() || legacy || unsure {
			if err := r.handOverFields(ctx, wls, w.owner, applying, true); err != nil {
				return err
			}
			r.rememberApplied(key, fieldSet{}) // what is left is in the cache once the hand-over reaches it
			r.forgetUnownedEnv(key)            // the hand-over changed who owns the variables
		}
	}
	if !w.needed {
		return nil
	}
	opts := []client.ApplyOption{client.FieldOwner(w.owner)}
	stoppedForcing := false
	if w.force {
		if r.beforeForcedWrite(key, wls) {
			opts = append(opts, client.ForceOwnership)
		} else {
			stoppedForcing = true
		}
	}
	ref := wls.Target()
	if err := r.Apply(ctx, w.ac, opts...); err != nil {
		if stoppedForcing {
			err = fightError{err}
		}
		return fmt.Errorf("applying to %s %s: %w", ref.Kind, ref.Name, err)
	}
	r.rememberApplied(key, applying)
	return nil
}

// hasEntryOf reports whether one of obj's managedFields entries belongs to manager.
func hasEntryOf(obj metav1.Object, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
}

// handOverFields reads the target from the apiserver (the cache keeps only the sizer's own managedFields entries)
// and gives up every field the sizer owns there but no longer applies, keeping its value. On a workload the sizer
// did not create, an entry of the shared FieldOwner (written by an earlier version) is renamed to this sizer's own
// field manager, so that it, too, is released when the sizer goes. The write carries the resourceVersion read, so a
// concurrent change makes it fail and the pass retry rather than overwrite someone's managedFields.
func (r *Reconciler) handOverFields(ctx context.Context, wls *sizerv1alpha1.WorkloadSizer, owner string, applying fieldSet,
	renameLegacy bool) error {
	live, err := getTarget(ctx, r.APIReader, wls)
	if err != nil || live == nil {
		return err
	}
	var legacy []string
	if !live.created && renameLegacy {
		legacy = []string{FieldOwner}
	}
	released := toHandOver(ownedFields(live.obj, append([]string{owner}, legacy...)...).minus(applying), live.created)
	released = released.minus(derivedEnv(released)) // kept the sizer's, for the apply to remove
	entries, changed := handOver(live.obj.GetManagedFields(), owner, legacy, released)
	if !changed || len(entries) == 0 {
		// Nothing to rewrite; or nothing would be left, which a patch cannot say (an empty list leaves
		// managedFields alone) and which cannot happen on a workload someone else made.
		return nil
	}
	patch := client.MergeFromWithOptions(live.obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	live.obj.SetManagedFields(entries)
	if err := r.Patch(ctx, live.obj, patch); err != nil {
		return fmt.Errorf("handing over %s of %s %s: %w", released, wls.Target().Kind, wls.Target().Name, err)
	}
	// The apiserver keeps the managedFields it had when it cannot decode the ones sent, and says nothing: check
	// that the sizer really gave the fields up before an apply that leaves them out would reset them.
	if kept := released.intersect(ownedFields(live.obj, append([]string{owner}, legacy...)...)); !kept.empty() {
		return fmt.Errorf("handing over %s of %s %s: the apiserver kept the sizer's ownership of %s", released,
			wls.Target().Kind, wls.Target().Name, kept)
	}
	return nil
}

// beforeForcedWrite consults and updates the sizer's fight log.
func (r *Reconciler) beforeForcedWrite(key string, wls *sizerv1alpha1.WorkloadSizer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fights == nil {
		r.fights = map[string]fightLog{}
	}
	next, force := r.fights[key].beforeForcedWrite(wls.Generation, stoppedForcing(wls))
	r.fights[key] = next
	return force
}
