package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/apply"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// child is one object to write, and the step it belongs to (storageKey for the volume and the claim).
type child struct {
	step string
	obj  client.Object
}

// syncChildren applies the storage and every step's Deployment and Service that differ from the spec, and deletes
// the steps that are no longer in the spec. A step an autoscaler scales (autoscalers, by step) gets no replicas; a
// step whose autoscaler went gets the replicas its hand-back keeps (kept, by step). It returns, per step
// (storageKey for the storage), why its objects could not be written, and the errors to retry on.
func (r *Reconciler) syncChildren(ctx context.Context, p *inferencev1alpha1.Pipeline, w pipelinespec.Wiring, autoscalers map[string]string,
	kept map[string]handBack) (map[string]failure, map[string]bool, []error) {
	failures := map[string]failure{}
	retrying := map[string]bool{}
	var errs []error
	sync := func(c child, steps ...string) bool {
		f, err := r.syncChild(ctx, p, c.obj)
		if err != nil {
			errs = append(errs, err)
		}
		for _, step := range append([]string{c.step}, steps...) {
			if _, seen := failures[step]; f != nil && !seen {
				failures[step] = *f
			}
			if err != nil && f == nil {
				retrying[step] = true // not refused: the step keeps its status while the write is retried
			}
		}
		return f == nil && err == nil
	}
	if p.Spec.ModelStorage.Type == inferencev1alpha1.StorageNFS {
		pv := desiredPV(p, volumeName(ctx, r.Client, p))
		pv.Labels[NamespaceLabel] = p.Namespace
		sync(child{storageKey, pv})
		sync(child{storageKey, desiredPVC(p, pv)})
	}
	// A cache claim serves every step of the pipeline on its node. A step whose claim is not known to be the
	// pipeline's (its name taken, or not read) is not written: its pods would fetch into a claim of someone else's.
	// A claim still being deleted (a class or size changed back before its pods were gone) is not there for a new
	// pod: a step moving to it waits, as it is, for the deletion to end, whose event brings the pass that makes it
	// again. A step whose Deployment names it already (someone deleted the claim under its pods) is written as
	// usual: holding it back would hold the pods that keep the claim from going; its new pods wait, unschedulable,
	// with the scheduler's reason in the step's status.
	claims, claimSteps := DesiredCacheClaims(p)
	heldBack := map[string]bool{}
	for _, c := range claims {
		steps := claimSteps[c.Name]
		if r.terminating(ctx, c) {
			for _, step := range steps {
				if !r.deploymentNames(ctx, pipelinespec.StepObjectName(p, step), p.Namespace, c.Name) {
					heldBack[step], retrying[step] = true, true
				}
			}
			continue
		}
		if !sync(child{steps[0], c}, steps[1:]...) {
			for _, step := range steps {
				heldBack[step] = true
			}
		}
	}
	names := map[string]bool{}
	for i := range p.Spec.Steps {
		name := pipelinespec.StepName(p.Spec.Steps, i)
		names[name] = true
		if pipelinespec.SourceOf(p.Spec.Steps[i].Model) == pipelinespec.ModelFetched {
			if msg := r.ModelFetch.problem(localCache(p) != nil); msg != "" {
				failures[name] = failure{inferencev1alpha1.ReasonApplyFailed, msg}
				continue
			}
		}
		if !heldBack[name] {
			d := DesiredDeployment(p, i, w, r.ModelFetch)
			leaveReplicasTo(autoscalers[name], p.Spec.Steps[i], d)
			kept[name].keep(d)
			sync(child{name, d})
		}
		sync(child{name, DesiredService(p, i)})
	}
	errs = append(errs, r.deleteUnusedCacheClaims(ctx, p, claimSteps)...)
	return failures, retrying, append(errs, r.deleteRemovedSteps(ctx, p, names)...)
}

// syncChild writes one object if it differs from desired. An object of that name that is not this pipeline's (the
// user's, or another pipeline's whose step names make the same name) is never written: that is a failure with
// reason NameTaken, which no retry fixes.
func (r *Reconciler) syncChild(ctx context.Context, p *inferencev1alpha1.Pipeline, desired client.Object) (*failure, error) {
	existing, err := r.current(ctx, desired)
	if err != nil {
		return nil, err // a failed read is not the step's failure: retried
	}
	if existing != nil && !ownedBy(existing, p) {
		if !orphanOf(existing, p) {
			return nameTakenFailure(desired), nil
		}
		if err := r.adopt(ctx, p, existing); err != nil {
			return nil, err // retried: the next pass reads it again
		}
	}
	keepShortStepLabel(existing, desired)
	keepFetcher(existing, desired)
	if existing == nil {
		// Created, never applied: a forced apply would take over an object of that name made since the read above.
		return r.create(ctx, desired)
	}
	needed, err := needsApply(existing, desired)
	if err != nil {
		return &failure{inferencev1alpha1.ReasonApplyFailed, err.Error()}, err
	}
	if !needed {
		return nil, nil
	}
	if f, err := r.beforeApply(ctx, existing, desired); f != nil || err != nil {
		return f, err
	}
	if err := r.ownFieldsByApply(ctx, desired); err != nil {
		return nil, err
	}
	if d, ok := desired.(*appsv1.Deployment); ok && d.Spec.Replicas == nil {
		if err := r.handOverReplicas(ctx, d); err != nil {
			return handOverFailed(err)
		}
	}
	if err := apply.Object(ctx, r.Client, desired, FieldOwner); err != nil {
		return writeFailed(err)
	}
	return nil, nil
}

// beforeApply makes what an apply of desired over existing cannot do by itself: a Service port of someone else's is
// never taken over (the Service's watch brings the next pass), a Deployment leaving RollingUpdate for Recreate drops
// its rollingUpdate parameters first, and a Service's renumbered ports are restored under their names.
func (r *Reconciler) beforeApply(ctx context.Context, existing, desired client.Object) (*failure, error) {
	switch d := desired.(type) {
	case *corev1.Service:
		if f, err := r.portTaken(ctx, existing.(*corev1.Service), d); f != nil || err != nil {
			return f, err
		}
		if stale := renumberedPorts(existing.(*corev1.Service), d); len(stale) > 0 {
			patch, err := renumberPortsPatch(stale, d)
			if err == nil {
				err = r.Patch(ctx, existing, patch, client.FieldOwner(FieldOwner))
			}
			if err != nil {
				return writeFailed(fmt.Errorf("restoring the ports of Service %s: %w", d.Name, err))
			}
		}
	case *appsv1.Deployment:
		if clearsRollingUpdate(existing.(*appsv1.Deployment), d) {
			if err := r.Patch(ctx, existing, recreatePatch, client.FieldOwner(FieldOwner)); err != nil {
				return writeFailed(fmt.Errorf("switching Deployment %s to Recreate: %w", d.Name, err))
			}
		}
	}
	return nil, nil
}

// terminating reports whether the pipeline's object of desired's name (as the cache has it) is being deleted.
func (r *Reconciler) terminating(ctx context.Context, desired client.Object) bool {
	existing := desired.DeepCopyObject().(client.Object)
	return r.Get(ctx, client.ObjectKeyFromObject(desired), existing) == nil && existing.GetDeletionTimestamp() != nil
}

// deploymentNames reports whether the Deployment of that name (as the cache has it) mounts the claim.
func (r *Reconciler) deploymentNames(ctx context.Context, name, namespace, claim string) bool {
	var d appsv1.Deployment
	return r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &d) == nil && slices.Contains(claimsNamedBy(&d), claim)
}

// create creates desired, stamped with its hash. A create fails if the name was taken since it was read as free, so
// an object of someone else's is never written over (NameTaken). The fields of a created object belong to an
// Update entry of the controller's field manager, which a later apply would not remove from: they are handed to its
// Apply entry at once.
func (r *Reconciler) create(ctx context.Context, desired client.Object) (*failure, error) {
	h, err := apply.Hash(desired)
	if err != nil {
		return nil, err
	}
	obj := desired.DeepCopyObject().(client.Object)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[apply.HashAnnotation] = h
	obj.SetAnnotations(ann)
	if err := r.Create(ctx, obj, client.FieldOwner(FieldOwner)); apierrors.IsAlreadyExists(err) {
		return nameTakenFailure(desired), nil
	} else if err != nil {
		return writeFailed(fmt.Errorf("creating %s %s: %w", kindOf(desired), desired.GetName(), err))
	}
	// Should this fail, the next apply of the object hands the fields over first (ownFieldsByApply).
	return nil, r.upgradeFields(ctx, obj)
}

// ownFieldsByApply hands the fields an Update entry of the controller's field manager holds (left by its create, or
// by a merge patch above) to its Apply entry before an apply, so that a field the apply leaves out is removed, not
// kept by the Update entry. It reads the live object: the cache strips managed fields.
func (r *Reconciler) ownFieldsByApply(ctx context.Context, desired client.Object) error {
	live := desired.DeepCopyObject().(client.Object)
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.upgradeFields(ctx, live)
}

// upgradeFields turns obj's Update entry of the controller's field manager into its Apply entry (no write when there
// is none), reading obj again on a conflict.
func (r *Reconciler) upgradeFields(ctx context.Context, obj client.Object) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldOwner), FieldOwner)
		if err != nil || patch == nil {
			return err
		}
		err = r.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		if apierrors.IsConflict(err) {
			if gerr := r.reader().Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
				return gerr
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("handing the fields of %s %s to the apply field manager: %w", kindOf(obj), obj.GetName(), err)
	}
	return nil
}

// renumberedPorts lists the live ports that hold one of desired's port names under another number (`kubectl edit`
// changed our port's number). Server-side apply merges Service ports by number, so an apply would add a second port
// of that name, which the apiserver refuses: those ports must go first. Ports of other names are someone else's
// (added by another field manager), and an apply leaves them alone.
func renumberedPorts(live, desired *corev1.Service) []int32 {
	want := map[string]int32{}
	for _, p := range desired.Spec.Ports {
		want[p.Name] = p.Port
	}
	var out []int32
	for _, p := range live.Spec.Ports {
		if n, ours := want[p.Name]; ours && n != p.Port {
			out = append(out, p.Port)
		}
	}
	return out
}

// renumberPortsPatch replaces the stale ports of a Service with desired's, in one write (removing them first could
// leave a Service without ports, which is invalid), and touches no other port: a strategic merge patch merges
// Service ports by their number.
func renumberPortsPatch(stale []int32, desired *corev1.Service) (client.Patch, error) {
	var ports []any
	for _, p := range stale {
		ports = append(ports, map[string]any{"port": p, "$patch": "delete"})
	}
	for _, p := range desired.Spec.Ports {
		ports = append(ports, p)
	}
	b, err := json.Marshal(map[string]any{"spec": map[string]any{"ports": ports}})
	if err != nil {
		return nil, fmt.Errorf("encoding the ports of Service %s: %w", desired.Name, err)
	}
	return client.RawPatch(types.StrategicMergePatchType, b), nil
}

// current reads the live object of desired's name, or nil. The cache holds only objects with the controller's
// labels, so a miss is checked with an uncached read: an object of the same name that the user made must be seen
// before anything is created over it. In steady state every child is in the cache and no uncached read is made.
func (r *Reconciler) current(ctx context.Context, desired client.Object) (client.Object, error) {
	key := client.ObjectKeyFromObject(desired)
	existing := desired.DeepCopyObject().(client.Object)
	err := r.Get(ctx, key, existing)
	if err == nil {
		return existing, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading %s %s: %w", kindOf(desired), key.Name, err)
	}
	if r.APIReader == nil {
		return nil, nil
	}
	existing = desired.DeepCopyObject().(client.Object)
	if err := r.APIReader.Get(ctx, key, existing); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kindOf(desired), key.Name, err)
	}
	return existing, nil
}

// clearsRollingUpdate reports whether live must lose its rollingUpdate parameters before desired can be applied:
// the apiserver defaults them for a RollingUpdate Deployment, nobody owns them, so an apply that switches to
// Recreate keeps them, and a Recreate Deployment with rollingUpdate is invalid (Forbidden) on every pass.
func clearsRollingUpdate(live, desired *appsv1.Deployment) bool {
	return desired.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && live.Spec.Strategy.RollingUpdate != nil
}

// recreatePatch switches a Deployment to Recreate and drops its rollingUpdate parameters in one valid write.
var recreatePatch = client.RawPatch(types.MergePatchType,
	[]byte(`{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`))

// deleteRemovedSteps deletes the Deployments and Services of steps that are no longer in the spec, once no pod or
// pod template of the pipeline sends to them: a step renamed or removed is still called by the old pods of the
// steps that sent to it, until their rollout to the new wiring has replaced them (each pod's end wakes the pipeline).
func (r *Reconciler) deleteRemovedSteps(ctx context.Context, p *inferencev1alpha1.Pipeline, names map[string]bool) []error {
	var deps appsv1.DeploymentList
	var svcs corev1.ServiceList
	var pods corev1.PodList
	sel := client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name}
	if err := r.List(ctx, &deps, client.InNamespace(p.Namespace), sel); err != nil {
		return []error{fmt.Errorf("listing step Deployments: %w", err)}
	}
	if err := r.List(ctx, &svcs, client.InNamespace(p.Namespace), sel); err != nil {
		return []error{fmt.Errorf("listing step Services: %w", err)}
	}
	if err := r.List(ctx, &pods, client.InNamespace(p.Namespace), sel); err != nil {
		return []error{fmt.Errorf("listing step pods: %w", err)}
	}
	specs := stepSpecs(deps.Items, pods.Items)
	// Orphans of the pipeline's name (left by a delete with --cascade=orphan) are its own again, steps it no longer
	// has included: they go as its other removed steps do.
	var errs []error
	for _, o := range append(objectsOf(deps.Items), objectsOf(svcs.Items)...) {
		if orphanOf(o, p) {
			errs = append(errs, r.adopt(ctx, p, o))
		}
	}
	removed := func(o client.Object) bool {
		return !names[o.GetLabels()[inferencev1alpha1.StepLabel]] && o.GetDeletionTimestamp() == nil && ownedBy(o, p)
	}
	called := calledSteps(svcs.Items, specs, names, removed)
	for i := range deps.Items {
		if d := &deps.Items[i]; removed(d) && !called[d.Labels[inferencev1alpha1.StepLabel]] {
			errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, d)))
		}
	}
	for i := range svcs.Items {
		if s := &svcs.Items[i]; removed(s) && !called[s.Labels[inferencev1alpha1.StepLabel]] {
			errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, s)))
		}
	}
	return errs
}

// stepSpecs are the pod specs of each step, by step name: its Deployment's template and its pods that still run.
func stepSpecs(deps []appsv1.Deployment, pods []corev1.Pod) map[string][]*corev1.PodSpec {
	specs := map[string][]*corev1.PodSpec{}
	for i := range deps {
		d := &deps[i]
		specs[d.Labels[inferencev1alpha1.StepLabel]] = append(specs[d.Labels[inferencev1alpha1.StepLabel]], &d.Spec.Template.Spec)
	}
	for i := range pods {
		if pod := &pods[i]; pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			specs[pod.Labels[inferencev1alpha1.StepLabel]] = append(specs[pod.Labels[inferencev1alpha1.StepLabel]], &pod.Spec)
		}
	}
	return specs
}

// calledSteps are the removed steps still called, by step name. A removed step is still called when a step of the
// spec (names), or a removed step still called, names its Service: a removed step that names itself, or removed
// steps that name each other, are not kept by that alone.
func calledSteps(svcs []corev1.Service, specs map[string][]*corev1.PodSpec, names map[string]bool,
	removed func(client.Object) bool) map[string]bool {
	called := map[string]bool{}
	for grew := true; grew; {
		grew = false
		for i := range svcs {
			s := &svcs[i]
			step := s.Labels[inferencev1alpha1.StepLabel]
			if !removed(s) || called[step] {
				continue
			}
			var callers []*corev1.PodSpec
			for caller, c := range specs {
				if caller != step && (names[caller] || called[caller]) {
					callers = append(callers, c...)
				}
			}
			if callsHost(callers, s.Name+"."+s.Namespace+".svc") {
				called[step], grew = true, true
			}
		}
	}
	return called
}

// objectsOf lists pointers to items as objects.
func objectsOf[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}

// callsHost reports whether a container of one of specs has an environment variable whose value holds a URL of host
// (NEXT_STEP_URL, NEXT_STEP_URLS, or the user's own).
func callsHost(specs []*corev1.PodSpec, host string) bool {
	for _, spec := range specs {
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for _, c := range cs {
				for _, e := range c.Env {
					if namesHost(e.Value, host) {
						return true
					}
				}
			}
		}
	}
	return false
}

// namesHost reports whether value holds a URL of host: "//host" followed by a port, a path, a comma, its end, or the
// cluster's domain (host.cluster.local is the same Service).
func namesHost(value, host string) bool {
	for rest := value; ; {
		i := strings.Index(rest, "//"+host)
		if i < 0 {
			return false
		}
		rest = rest[i+2+len(host):]
		if rest == "" || strings.ContainsRune(":/,?.", rune(rest[0])) {
			return true
		}
	}
}

// deleteUnusedCacheClaims deletes p's cache claims that no step needs any more (its steps moved, or the cache's
// class or size changed, or it left local volumes): a cache is filled again from the models' sources. A claim that
// one of p's step Deployments still names (a step held back this pass, or not rolled yet) is still needed: its next
// pod would wait for it forever. A claim that a pod still mounts stays until that pod is gone (the claim's in-use
// protection).
func (r *Reconciler) deleteUnusedCacheClaims(ctx context.Context, p *inferencev1alpha1.Pipeline, wanted map[string][]string) []error {
	var claims corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &claims, client.InNamespace(p.Namespace),
		client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name, CacheClaimLabel: "true"}); err != nil {
		return []error{fmt.Errorf("listing model cache claims: %w", err)}
	}
	if len(claims.Items) == 0 {
		return nil
	}
	var deps appsv1.DeploymentList
	if err := r.List(ctx, &deps, client.InNamespace(p.Namespace), client.MatchingLabels{inferencev1alpha1.PipelineLabel: p.Name}); err != nil {
		return []error{fmt.Errorf("listing step Deployments: %w", err)}
	}
	named := map[string]bool{}
	for i := range deps.Items {
		for _, c := range claimsNamedBy(&deps.Items[i]) {
			named[c] = true
		}
	}
	var errs []error
	for i := range claims.Items {
		c := &claims.Items[i]
		if _, ok := wanted[c.Name]; ok || named[c.Name] || c.DeletionTimestamp != nil || !ownedBy(c, p) {
			continue
		}
		if err := r.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting model cache claim %s: %w", c.Name, err))
		}
	}
	return errs
}

// adopt makes p the controller of obj, one of its orphans, under the resourceVersion read: an object changed since
// is not adopted, and the next pass looks again.
func (r *Reconciler) adopt(ctx context.Context, p *inferencev1alpha1.Pipeline, obj client.Object) error {
	// The pipeline as the apiserver has it now: one being deleted (with --cascade=orphan, say) adopts nothing, or the
	// garbage collector would delete what the user asked to keep once the pipeline is gone.
	var live inferencev1alpha1.Pipeline
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(p), &live); err != nil {
		return fmt.Errorf("reading the pipeline before adopting %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	if live.UID != p.UID || live.DeletionTimestamp != nil {
		return fmt.Errorf("not adopting %s %s: the pipeline is being deleted", kindOf(obj), obj.GetName())
	}
	base := obj.DeepCopyObject().(client.Object)
	ref := metav1.NewControllerRef(p, inferencev1alpha1.GroupVersion.WithKind("Pipeline"))
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), *ref))
	if err := r.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	return nil
}
