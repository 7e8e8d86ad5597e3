package main

import (
	"math/rand/v2"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// plan is the size of a run.
type plan struct {
	Nodes, Faults, Sizers, Pipelines int
	// AdmissionFaults is how many replica deaths each controller's admission scenario injects.
	AdmissionFaults int
	// Restarts is how many control-plane restarts (etcd and the apiserver in turn) the restart scenario injects.
	Restarts int
	// FlapNodes of the simulated nodes flap for FlapFor, one flap every FlapEvery.
	FlapNodes          int
	FlapFor, FlapEvery time.Duration
	// SoakNodes is the pool the soak churns for SoakFor.
	SoakNodes int
	SoakFor   time.Duration
}

var (
	fullPlan = plan{Nodes: 200, Faults: 20, Sizers: 50, Pipelines: 10, AdmissionFaults: 12, Restarts: 6,
		FlapNodes: 50, FlapFor: 5 * time.Minute, FlapEvery: 200 * time.Millisecond, SoakNodes: 500, SoakFor: 30 * time.Minute}
	quickPlan = plan{Nodes: 100, Faults: 3, Sizers: 20, Pipelines: 5, AdmissionFaults: 2, Restarts: 2,
		FlapNodes: 20, FlapFor: time.Minute, FlapEvery: 200 * time.Millisecond, SoakNodes: 150, SoakFor: 3 * time.Minute}
)

// controllers are the chart's three controllers, the names of their Deployments and leases after the release's.
var controllers = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

// env is what every scenario runs with: the cluster, the release, the plan and the fault timing.
type env struct {
	c                            client.Client
	cfg                          *rest.Config
	clusterTool, clusterDir      string
	release, releaseNS, auditLog string
	plan                         plan
	nodeNames                    []string
	rng                          *rand.Rand
}

// injector returns the fault injector of one of the release's controllers.
func (e *env) injector(controller string) *injector {
	return &injector{c: e.c, clusterTool: e.clusterTool, clusterDir: e.clusterDir, namespace: e.releaseNS,
		deployment: e.release + "-" + controller, lease: 15 * time.Second}
}

// injectors returns the fault injectors of the three controllers, by name.
func (e *env) injectors() map[string]*injector {
	in := map[string]*injector{}
	for _, name := range controllers {
		in[name] = e.injector(name)
	}
	return in
}
