package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/localcluster"
)

// WebhooksDownResult is the run of the scenario where no webhook answers while the controllers run: what a user's
// write gets, and whether the controllers' own writes still land.
type WebhooksDownResult struct {
	Checks []Check `json:"checks"`
	// Restored is how long after the webhooks were pointed at their Services' port again a create was admitted.
	Restored time.Duration `json:"restored"`
}

// Check is one expectation of a scenario, and what was seen.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Seen   string `json:"seen"`
}

// failed says how many checks failed.
func (r WebhooksDownResult) failed() int {
	n := 0
	for _, c := range r.Checks {
		if !c.Passed {
			n++
		}
	}
	return n
}

// unreachablePort is the Service port every webhook is pointed at while the scenario runs: the controllers'
// Services have no such port, so the apiserver reaches no webhook, while the controllers themselves run on, as when
// a network policy, a firewall or another CNI keeps the apiserver from the pods, or while the only replica starts.
// (Taking the Services' endpoints away would not do: the apiserver's open connections to the pods outlive them.)
const unreachablePort = 4443

// webhooksDown cuts every webhook off, checks what users and controllers get meanwhile, and puts them back (to port
// 443, the chart's).
func webhooksDown(ctx context.Context, c client.Client, ns, releaseNS, release, clusterTool, clusterDir string) (WebhooksDownResult, error) {
	var r WebhooksDownResult
	ds, wls, ipl, err := webhooksDownObjects(ctx, c, ns)
	if err != nil {
		return r, fmt.Errorf("setting up: %w", err)
	}
	configs := make([]string, len(controllers))
	for i, name := range controllers {
		configs[i] = release + "-" + name
	}
	// Restored with a context of its own: an interrupted run still points the webhooks back.
	restore := func() error { return setWebhookPort(context.WithoutCancel(ctx), c, configs, 443) }
	// An earlier run that died mid-way may have left them pointed away: start from the chart's port.
	if err := restore(); err != nil {
		return r, err
	}
	if err := setWebhookPort(ctx, c, configs, unreachablePort); err != nil {
		return r, errors.Join(err, restore())
	}
	defer func() { // on an early return; the normal path restores and times it below
		if err := restore(); err != nil {
			fmt.Printf("chaos: pointing the webhooks back at port 443: %v\n", err)
		}
	}()

	// The webhooks are gone once a valid create is refused by each of them.
	objects := map[string]func(i int) client.Object{}
	for _, name := range controllers {
		objects[name], _ = admissionObject(name, ns)
	}
	err = pollUntil(ctx, time.Minute, func() (bool, error) {
		for _, name := range controllers {
			if c.Create(ctx, objects[name](0), client.DryRunAll) == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return r, fmt.Errorf("the webhooks still answer a minute after they were pointed at a port their Services lack: %w", err)
	}

	// A user's write is refused, and the refusal names the webhook that could not be reached.
	for _, name := range controllers {
		err := c.Create(ctx, objects[name](1), client.DryRunAll)
		hook := webhookName(name)
		r.Checks = append(r.Checks, Check{Name: fmt.Sprintf("a create of a %s is refused, naming webhook %s", kindOf(name), hook),
			Passed: err != nil && strings.Contains(err.Error(), hook), Seen: errText(err)})
	}
	// The CRDs' schema and CEL rules still refuse what they can check, naming the field. They are seen where no
	// webhook runs: the release's namespace, which every webhook's namespaceSelector spares (elsewhere the mutating
	// webhook's failure refuses the object first). webhooks/invalid_test.go checks every such rule without webhooks.
	for _, bad := range celRefused(releaseNS) {
		err := c.Create(ctx, bad.obj, client.DryRunAll)
		r.Checks = append(r.Checks, Check{Name: fmt.Sprintf("the CRD refuses %s, naming %s", bad.what, bad.field),
			Passed: apierrors.IsInvalid(err) && strings.Contains(err.Error(), bad.field), Seen: errText(err)})
	}

	// The controllers' own writes go on: a node that joins gets its DaemonSet pod and the DaemonSet's status counts
	// it, and objects with finalizers are deleted (each controller removes its finalizer, an update its webhooks
	// spare).
	r.Checks = append(r.Checks, daemonSetFollowsANewNode(ctx, c, ds, clusterTool, clusterDir))
	for _, obj := range []client.Object{wls, ipl} {
		r.Checks = append(r.Checks, deletedThroughFinalizer(ctx, c, obj))
	}

	restoredAt := time.Now()
	if err := restore(); err != nil {
		return r, err
	}
	err = pollUntil(ctx, 2*time.Minute, func() (bool, error) {
		for _, name := range controllers {
			if c.Create(ctx, objects[name](2), client.DryRunAll) != nil {
				return false, nil
			}
		}
		return true, nil
	})
	r.Restored = time.Since(restoredAt)
	r.Checks = append(r.Checks, Check{Name: "creates are admitted again once the webhooks point at their Services' port", Passed: err == nil,
		Seen: fmt.Sprintf("after %s", seconds(r.Restored))})
	return r, nil
}

// webhooksDownObjects creates one object of each kind, each with work for its controller, and waits until each
// converged: the DaemonSet's pods available, the sizer's Deployment ready, the Pipeline's finalizer and steps there.
func webhooksDownObjects(ctx context.Context, c client.Client, ns string) (*daemonsetv1alpha1.DaemonSet, *sizerv1alpha1.WorkloadSizer, *inferencev1alpha1.Pipeline, error) {
	mk := func(name string) client.Object {
		f, _ := admissionObject(name, ns)
		o := f(0)
		o.SetName("webhooks-down")
		return o
	}
	ds := mk("daemonset-controller").(*daemonsetv1alpha1.DaemonSet)
	wls := mk("workload-sizer").(*sizerv1alpha1.WorkloadSizer)
	wls.Spec.TargetRef.Name = "webhooks-down"
	ipl := mk("pipeline-controller").(*inferencev1alpha1.Pipeline)
	for _, o := range []client.Object{ds, wls, ipl} {
		if err := c.Create(ctx, o); err != nil {
			return nil, nil, nil, err
		}
	}
	err := pollUntil(ctx, 3*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(wls), wls); err != nil {
			return false, err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ipl), ipl); err != nil {
			return false, err
		}
		dsDone := ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberAvailable == ds.Status.DesiredNumberScheduled
		return dsDone && wls.Status.ReadyReplicas == 2 && len(wls.Finalizers) > 0 && len(ipl.Finalizers) > 0 &&
			len(ipl.Status.Steps) == 1, nil
	})
	return ds, wls, ipl, err
}

// celCase is an invalid object the CRD's schema or CEL rules refuse, and the field path the refusal names.
type celCase struct {
	what, field string
	obj         client.Object
}

// celRefused returns invalid objects that the CRDs refuse without a webhook, in namespace ns.
func celRefused(ns string) []celCase {
	meta := metav1.ObjectMeta{Name: "chaos-invalid", Namespace: ns}
	minusOne := intstr.FromInt32(-1)
	return []celCase{
		{"a WorkloadSizer of size -1", "spec.size", &sizerv1alpha1.WorkloadSizer{ObjectMeta: meta,
			Spec: sizerv1alpha1.WorkloadSizerSpec{TargetRef: &sizerv1alpha1.TargetRef{Kind: "Deployment", Name: "x"}, Size: ptr.To(int32(-1))}}},
		{"a DaemonSet whose maxUnavailable is -1", "spec.updateStrategy.rollingUpdate.maxUnavailable", &daemonsetv1alpha1.DaemonSet{
			ObjectMeta: meta, Spec: daemonsetv1alpha1.DaemonSetSpec{Image: "registry.k8s.io/pause:3.10.2",
				UpdateStrategy: daemonsetv1alpha1.DaemonSetUpdateStrategy{Type: daemonsetv1alpha1.RollingUpdateStrategyType,
					RollingUpdate: &daemonsetv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: &minusOne}}}}},
	}
}

// daemonSetFollowsANewNode adds a simulated node and checks that the DaemonSet controller makes a pod there and
// writes a status that counts it, then takes the node away again.
func daemonSetFollowsANewNode(ctx context.Context, c client.Client, ds *daemonsetv1alpha1.DaemonSet, clusterTool, clusterDir string) Check {
	check := Check{Name: "the DaemonSet controller runs a pod on a node that joins and writes its status"}
	var pool corev1.NodeList
	if err := c.List(ctx, &pool, client.MatchingLabels(fakeNodeSelector)); err != nil {
		check.Seen = errText(err)
		return check
	}
	var before daemonsetv1alpha1.DaemonSet
	if err := c.Get(ctx, client.ObjectKeyFromObject(ds), &before); err != nil {
		check.Seen = errText(err)
		return check
	}
	start := time.Now()
	if err := localcluster.ResizePool(ctx, c, clusterTool, clusterDir, len(pool.Items)+1); err != nil {
		check.Seen = errText(err)
		return check
	}
	want := before.Status.DesiredNumberScheduled + 1
	var cur daemonsetv1alpha1.DaemonSet
	err := pollUntil(ctx, time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), &cur); err != nil {
			return false, err
		}
		return cur.Status.DesiredNumberScheduled == want && cur.Status.NumberAvailable == want, nil
	})
	check.Passed = err == nil
	check.Seen = fmt.Sprintf("%d of %d nodes available after %s", cur.Status.NumberAvailable, want, seconds(time.Since(start)))
	if err != nil {
		check.Seen = fmt.Sprintf("after a minute the status says %d desired, %d available, want %d: %v",
			cur.Status.DesiredNumberScheduled, cur.Status.NumberAvailable, want, err)
	}
	// The pool goes back to its size, also on an interrupted run: the next scenario counts on it.
	if err := localcluster.ResizePool(context.WithoutCancel(ctx), c, clusterTool, clusterDir, len(pool.Items)); err != nil {
		check.Passed = false
		check.Seen += fmt.Sprintf("; shrinking the pool back to %d nodes: %v", len(pool.Items), err)
	}
	return check
}

// deletedThroughFinalizer deletes an object that holds its controller's finalizer and checks that it goes.
func deletedThroughFinalizer(ctx context.Context, c client.Client, obj client.Object) Check {
	kind := fmt.Sprintf("%T", obj)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	check := Check{Name: fmt.Sprintf("a %s with its controller's finalizer is deleted", kind)}
	if err := c.Delete(ctx, obj); err != nil {
		check.Seen = errText(err)
		return check
	}
	start := time.Now()
	err := pollUntil(ctx, time.Minute, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	check.Passed = err == nil
	check.Seen = fmt.Sprintf("gone after %s", seconds(time.Since(start)))
	if err != nil {
		check.Seen = fmt.Sprintf("still there after a minute, finalizers %v: %v", obj.GetFinalizers(), err)
	}
	return check
}

// setWebhookPort points every webhook of the mutating and validating configurations named configs at port of
// their Service.
func setWebhookPort(ctx context.Context, c client.Client, configs []string, port int32) error {
	for _, name := range configs {
		for _, obj := range []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}} {
			// Guarded by the resourceVersion: the list of webhooks is replaced whole, and a CA bundle the controller
			// injected since the read must not be undone. On a conflict, read again.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
					return err
				}
				base := obj.DeepCopyObject().(client.Object)
				for _, svc := range webhookServices(obj) {
					svc.Port = ptr.To(port)
				}
				return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			})
			if err != nil {
				return fmt.Errorf("%T %s: %w", obj, name, err)
			}
		}
	}
	return nil
}

// webhookServices returns the Service references of a webhook configuration's webhooks, to change in place.
func webhookServices(obj client.Object) []*admissionregistrationv1.ServiceReference {
	var out []*admissionregistrationv1.ServiceReference
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			if svc := o.Webhooks[i].ClientConfig.Service; svc != nil {
				out = append(out, svc)
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			if svc := o.Webhooks[i].ClientConfig.Service; svc != nil {
				out = append(out, svc)
			}
		}
	}
	return out
}

// webhookName is the name of a controller's mutating webhook, the first the apiserver calls: "m", its kind in
// lower case, ".keelson.dev", as the webhooks' markers name them.
func webhookName(controller string) string {
	return "m" + strings.ToLower(kindOf(controller)) + ".keelson.dev"
}

// kindOf is the kind a controller serves.
func kindOf(controller string) string {
	return map[string]string{"daemonset-controller": "DaemonSet", "workload-sizer": "WorkloadSizer",
		"pipeline-controller": "Pipeline"}[controller]
}

// errText is an error's text for a check, cut short; "admitted" when there was none.
func errText(err error) string {
	if err == nil {
		return "admitted"
	}
	s := err.Error()
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}
