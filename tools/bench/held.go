package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// holdDaemonSet creates the implementation's DaemonSet name and waits until it runs on all n nodes; it stays for
// the steady-state window and the memory reading.
func holdDaemonSet(ctx context.Context, c client.Client, impl, ns, name string, n int) error {
	ds := newDaemonSet(impl, ns, name, recreate)
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ds)); err != nil {
		return err
	}
	return poll(ctx, 15*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, err
		}
		return converged(ds, int32(n)), nil
	})
}

// heldObjects counts what each controller holds in the steady-state window, by steadyControllers name.
func heldObjects(ctx context.Context, c client.Client, dsNS, szNS, plNS string) (map[string]int, error) {
	var kds daemonsetv1alpha1.DaemonSetList
	var ads appsv1.DaemonSetList
	var wls sizerv1alpha1.WorkloadSizerList
	var pls inferencev1alpha1.PipelineList
	for _, l := range []struct {
		list client.ObjectList
		ns   string
	}{{&kds, dsNS}, {&ads, dsNS}, {&wls, szNS}, {&pls, plNS}} {
		if err := c.List(ctx, l.list, client.InNamespace(l.ns)); err != nil {
			return nil, err
		}
	}
	return map[string]int{"daemonset-controller": len(kds.Items), builtinDaemonSet: len(ads.Items),
		"workload-sizer": len(wls.Items), "pipeline-controller": len(pls.Items)}, nil
}

// memorySettings reads each controller container's memory request and limit from its Deployment as deployed:
// the chart's values after every override, which is what the measured process runs under.
func memorySettings(ctx context.Context, c client.Client, releaseNS, release string) (request, limit map[string]int64, err error) {
	request, limit = map[string]int64{}, map[string]int64{}
	for _, b := range binaryNames {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: release + "-" + b}, &d); err != nil {
			return nil, nil, fmt.Errorf("the %s Deployment: %w", b, err)
		}
		for _, ctr := range d.Spec.Template.Spec.Containers {
			if ctr.Name != "controller" {
				continue
			}
			if q, ok := ctr.Resources.Requests[corev1.ResourceMemory]; ok {
				request[b] = q.Value()
			}
			if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
				limit[b] = q.Value()
			}
		}
	}
	return request, limit, nil
}

// clientBudget reads a controller Deployment's client budget from its container's flags (--kube-api-qps,
// --kube-api-burst), as deployed.
func clientBudget(ctx context.Context, c client.Client, ns, name string) (qps, burst float64, err error) {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		return 0, 0, fmt.Errorf("the %s Deployment: %w", name, err)
	}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name == "controller" {
			qps, burst = budgetOf(ctr.Args)
		}
	}
	if qps <= 0 {
		return 0, 0, fmt.Errorf("the %s Deployment's controller sets no --kube-api-qps", name)
	}
	return qps, burst, nil
}

// budgetOf reads --kube-api-qps and --kube-api-burst from a container's arguments (0 for one not given).
func budgetOf(args []string) (qps, burst float64) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--kube-api-qps="); ok {
			qps, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(a, "--kube-api-burst="); ok {
			burst, _ = strconv.ParseFloat(v, 64)
		}
	}
	return qps, burst
}
