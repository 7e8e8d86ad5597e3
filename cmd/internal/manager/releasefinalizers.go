package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// releasePollInterval is how often the release mode looks again for the controller's pods.
const releasePollInterval = time.Second

// releaseFinalizers is the --release-finalizers mode (the chart's pre-delete hook): it stops the controller's
// Deployment, so no replica adds a finalizer back, then removes the binary's own finalizers from every object of
// its kinds. It writes what it did to out and returns the first error. A run that fails after stopping the
// controller (its deadline, a refused write, SIGTERM) starts the controller again before it returns: the uninstall
// then stops, and a controller left at 0 would leave its objects unserved and its webhook refusing every write.
func releaseFinalizers(ctx context.Context, b Binary, opts Options, out io.Writer) (err error) {
	namespace, err := podNamespace()
	if err != nil {
		return errors.New("--release-finalizers: not running in a pod and POD_NAMESPACE is unset")
	}
	c, err := oneShotClient(b.Name, clientgoscheme.AddToScheme)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, opts.ReleaseFinalizersTimeout)
	defer cancel()

	key := types.NamespacedName{Namespace: namespace, Name: opts.ReleaseFinalizers}
	replicas, found, err := stopDeployment(runCtx, c, key, out)
	if err != nil {
		return err
	}
	if found {
		defer func() {
			if err == nil {
				return
			}
			if replicas == 0 {
				replicas = int32(opts.ReleaseFinalizersReplicas) //nolint:gosec // a replica count, validated non-negative
			}
			if rerr := restartDeployment(c, key, replicas, out); rerr != nil {
				err = errors.Join(err, rerr)
			}
			also, _ := parseAlso(opts.ReleaseFinalizersAlso) // validated with the flags
			for name, n := range also {
				other := types.NamespacedName{Namespace: namespace, Name: name}
				if rerr := restartStopped(c, other, n, out); rerr != nil {
					err = errors.Join(err, rerr)
				}
			}
		}()
		if err := waitForPods(runCtx, c, key, out); err != nil {
			return err
		}
	}
	for _, f := range b.Finalizers {
		if err := releaseFinalizer(runCtx, c, f, out); err != nil {
			return err
		}
	}
	return nil
}

// restartTimeout bounds giving the replicas back after a failed run: the run's own deadline has passed by then, and
// a pod told to stop has its grace period (30 s by default) left.
const restartTimeout = 15 * time.Second

// restartDeployment gives the Deployment its replicas back after a failed run.
func restartDeployment(c client.Client, key types.NamespacedName, replicas int32, out io.Writer) error {
	if replicas == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	scale := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	if err := c.SubResource("scale").Patch(ctx, d, scale); err != nil {
		return fmt.Errorf("starting Deployment %s again (%d replicas): %w", key, replicas, err)
	}
	_, _ = fmt.Fprintf(out, "Scaled Deployment %s back to %d: the controller runs as before the uninstall\n", key, replicas)
	return nil
}

// restartStopped gives another controller's Deployment its replicas back when it is at 0: its own hook ran before
// this one and stopped it. One at more than 0 (its hook has not run, or failed and restarted it) is left alone.
func restartStopped(c client.Client, key types.NamespacedName, replicas int32, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading Deployment %s: %w", key, err)
	}
	if ptr.Deref(d.Spec.Replicas, 1) > 0 {
		return nil
	}
	return restartDeployment(c, key, replicas, out)
}

// stopDeployment scales the Deployment to zero through its scale subresource and returns the replicas it had. A
// Deployment that is already gone has nothing to stop (found is false).
func stopDeployment(ctx context.Context, c client.Client, key types.NamespacedName, out io.Writer) (replicas int32, found bool, err error) {
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); apierrors.IsNotFound(err) {
		_, _ = fmt.Fprintf(out, "Deployment %s not found: no controller to stop\n", key)
		return 0, false, nil
	} else if err != nil {
		return 0, false, fmt.Errorf("reading Deployment %s: %w", key, err)
	}
	replicas = ptr.Deref(d.Spec.Replicas, 1)
	scale := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
	if err := c.SubResource("scale").Patch(ctx, &d, scale); err != nil {
		return 0, false, fmt.Errorf("scaling Deployment %s to 0: %w", key, err)
	}
	_, _ = fmt.Fprintf(out, "Scaled Deployment %s to 0 (from %d)\n", key, replicas)
	return replicas, true, nil
}

// waitForPods waits until none of the Deployment's pods remain: a replica still shutting down may finish a
// reconcile that adds the finalizer back.
func waitForPods(ctx context.Context, c client.Client, key types.NamespacedName, out io.Writer) error {
	var d appsv1.Deployment
	if err := c.Get(ctx, key, &d); err != nil {
		return fmt.Errorf("reading Deployment %s: %w", key, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("the selector of Deployment %s: %w", key, err)
	}
	var left []string
	err = wait.PollUntilContextCancel(ctx, releasePollInterval, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return false, fmt.Errorf("listing the pods of Deployment %s: %w", key, err)
		}
		left = remainingPods(pods.Items)
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the pods of Deployment %s to go (still there: %v): %w", key, left, err)
	}
	_, _ = fmt.Fprintf(out, "No pod of Deployment %s is left\n", key)
	return nil
}

// remainingPods names the pods that may still run the controller: every pod that has not ended, terminating ones
// included (they may be finishing a reconcile). Pods that ended (an evicted replica, say) run nothing and may
// linger until garbage collection, so they do not count.
func remainingPods(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		names = append(names, p.Name)
	}
	return names
}

// releaseFinalizer removes f from every object of its kind, in every namespace. A kind the cluster does not know
// (its CRD is gone) has no objects.
func releaseFinalizer(ctx context.Context, c client.Client, f Finalizer, out io.Writer) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(f.GVK.GroupVersion().WithKind(f.GVK.Kind + "List"))
	if err := c.List(ctx, list); meta.IsNoMatchError(err) {
		_, _ = fmt.Fprintf(out, "No %s objects: the cluster does not know the kind\n", f.GVK.Kind)
		return nil
	} else if err != nil {
		return fmt.Errorf("listing %s objects: %w", f.GVK.Kind, err)
	}
	released := 0
	for i := range list.Items {
		obj := &list.Items[i]
		if _, had := withoutFinalizer(obj.GetFinalizers(), f.Name); !had {
			continue
		}
		done, err := removeFinalizer(ctx, c, obj, f.Name)
		if err != nil {
			return fmt.Errorf("removing finalizer %s from %s %s: %w", f.Name, f.GVK.Kind, client.ObjectKeyFromObject(obj), err)
		}
		if done {
			released++
			_, _ = fmt.Fprintf(out, "Removed finalizer %s from %s %s\n", f.Name, f.GVK.Kind, client.ObjectKeyFromObject(obj))
		}
	}
	_, _ = fmt.Fprintf(out, "Released %d of %d %s object(s)\n", released, len(list.Items), f.GVK.Kind)
	return nil
}

// removeFinalizer takes name off obj with a merge patch that carries the object's resourceVersion (the
// controllers' roles grant patch, not update), so a concurrent write is never overwritten: on a conflict it reads
// the object again and retries. It reports whether it removed the finalizer (false when the object is gone or no
// longer has it).
func removeFinalizer(ctx context.Context, c client.Client, obj *unstructured.Unstructured, name string) (bool, error) {
	removed := false
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		first = false
		keep, had := withoutFinalizer(obj.GetFinalizers(), name)
		if !had {
			return nil
		}
		base := obj.DeepCopy()
		obj.SetFinalizers(keep)
		if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		removed = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return removed, err
}

// withoutFinalizer returns the finalizers to keep, every one but name in their order, and whether name was there.
func withoutFinalizer(finalizers []string, name string) ([]string, bool) {
	if !slices.Contains(finalizers, name) {
		return finalizers, false
	}
	keep := make([]string, 0, len(finalizers)-1)
	for _, f := range finalizers {
		if f != name {
			keep = append(keep, f)
		}
	}
	return keep, true
}
