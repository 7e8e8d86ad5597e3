//go:build integration

// Package webhooks_test sends invalid objects of the three kinds, as raw YAML the way kubectl sends them, to a real
// apiserver: once with the three binaries' webhooks registered and served, once with only the CRDs (a cluster
// while the webhooks are down). Each object must be refused naming its field path; those the CRD's schema and CEL
// can check must be refused without the webhooks too, and the others are admitted there (so the table says
// exactly what each layer checks). The per-kind tables beside each webhook hold the typed cases; this one adds
// what a typed object cannot express (wrong types, unknown fields, numbers beyond int32) and every bound.
package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/pipelinespec"
	"github.com/keelson-dev/keelson/internal/testenv"
	daemonsetwebhook "github.com/keelson-dev/keelson/webhooks/daemonset"
	pipelinewebhook "github.com/keelson-dev/keelson/webhooks/pipeline"
	sizerwebhook "github.com/keelson-dev/keelson/webhooks/sizer"
)

var pair *testenv.WebhookPair

func TestMain(m *testing.M) {
	opts := testenv.Options{AddToScheme: []func(*runtime.Scheme) error{
		daemonsetv1alpha1.AddToScheme, sizerv1alpha1.AddToScheme, inferencev1alpha1.AddToScheme}}
	p, err := testenv.StartWebhookPair(opts, "charts/keelson/files/webhooks/daemonset-controller.yaml",
		"charts/keelson/files/webhooks/workload-sizer.yaml", "charts/keelson/files/webhooks/pipeline-controller.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pair = p
	code := m.Run()
	_ = p.Stop()
	os.Exit(code)
}

// serveAll serves the three binaries' webhooks from one manager, as three managers would.
func serveAll(mgr ctrl.Manager) error {
	return errors.Join(daemonsetwebhook.SetupWithManager(mgr), sizerwebhook.SetupWithManager(mgr),
		pipelinewebhook.SetupWithManager(mgr, pipelinespec.Fetcher{}))
}

// badInput is an invalid object: a valid one of its kind with patch merged over it (a JSON merge patch, in YAML).
type badInput struct {
	kind  string
	what  string
	patch string
	// path is the field path the refusal must name.
	path string
	// crd: the CRD alone (its OpenAPI schema and CEL rules) refuses it, so it is refused with the webhooks down too;
	// otherwise only the webhooks refuse it, and without them it is admitted.
	crd bool
}

const (
	kds = "DaemonSet"
	wls = "WorkloadSizer"
	ipl = "Pipeline"
)

// valid is the smallest valid object of a kind.
func valid(kind, name string) map[string]any {
	var doc string
	switch kind {
	case kds:
		doc = `{apiVersion: daemonset.keelson.dev/v1alpha1, kind: DaemonSet, spec: {image: "agent:v1"}}`
	case wls:
		// Each sizer sizes a workload of its own name: two sizers of one workload are refused.
		doc = `{apiVersion: sizer.keelson.dev/v1alpha1, kind: WorkloadSizer, spec: {targetRef: {kind: Deployment, name: ` + name + `}, size: 2}}`
	case ipl:
		doc = `{apiVersion: inference.keelson.dev/v1alpha1, kind: Pipeline, spec: {modelStorage: {type: nfs,
			csiParameter: {server: nfs, share: /m}}, steps: [{name: a, image: "x:v1"}, {name: b, image: "y:v1"}]}}`
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		panic(err)
	}
	obj["metadata"] = map[string]any{"name": name}
	return obj
}

// merge applies a JSON merge patch (RFC 7386): maps merge, null removes, anything else replaces.
func merge(dst, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			dv, ok := dst[k].(map[string]any)
			if !ok {
				dv = map[string]any{}
				dst[k] = dv
			}
			merge(dv, pv)
		default:
			dst[k] = v
		}
	}
}

// many renders n copies of item (with %d for the index) as a YAML flow list.
func many(n int, item string) string {
	items := make([]string, n)
	for i := range items {
		if strings.Contains(item, "%d") {
			items[i] = fmt.Sprintf(item, i)
		} else {
			items[i] = item
		}
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// manyKeys renders n keys key0..key(n-1) with value as a YAML flow map.
func manyKeys(n int, key, value string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("%s%d: %s", key, i, value)
	}
	return "{" + strings.Join(items, ", ") + "}"
}

var badInputs = []badInput{
	// DaemonSet: names, types, unknown fields, every bound of the rollout knobs, selectors.
	{kds, "name with capitals", `{metadata: {name: Agent}}`, "metadata.name", true},
	{kds, "name of 254 characters", `{metadata: {name: ` + strings.Repeat("a", 254) + `}}`, "metadata.name", true},
	{kds, "name with an underscore", `{metadata: {name: node_agent}}`, "metadata.name", true},
	{kds, "image a number", `{spec: {image: 5}}`, "spec.image", true},
	{kds, "misspelt field", `{spec: {imagee: "agent:v1"}}`, `unknown field "spec.imagee"`, true},
	{kds, "misspelt nested field", `{spec: {updateStrategy: {rollingUpdate: {maxUnavaliable: 1}}}}`,
		`unknown field "spec.updateStrategy.rollingUpdate.maxUnavaliable"`, true},
	{kds, "empty container list", `{spec: {image: "", template: {spec: {containers: []}}}}`, "spec.image", true},
	{kds, "restartPolicy OnFailure", `{spec: {image: null, template: {spec: {restartPolicy: OnFailure, containers: [{name: c, image: x}]}}}}`,
		"spec.template.spec.restartPolicy", true},
	{kds, "maxUnavailable 101%", `{spec: {updateStrategy: {rollingUpdate: {maxUnavailable: "101%"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxUnavailable", true},
	{kds, "maxUnavailable -1%", `{spec: {updateStrategy: {rollingUpdate: {maxUnavailable: "-1%"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxUnavailable", true},
	{kds, "maxUnavailable 05%", `{spec: {updateStrategy: {rollingUpdate: {maxUnavailable: "05%"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxUnavailable", true},
	{kds, "maxUnavailable +5%", `{spec: {updateStrategy: {rollingUpdate: {maxUnavailable: "+5%"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxUnavailable", true},
	{kds, "maxUnavailable 10.5%", `{spec: {updateStrategy: {rollingUpdate: {maxUnavailable: "10.5%"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxUnavailable", true},
	{kds, "maxSurge a string without %", `{spec: {updateStrategy: {rollingUpdate: {maxSurge: "5"}}}}`,
		"spec.updateStrategy.rollingUpdate.maxSurge", true},
	{kds, "maxSurge a fraction", `{spec: {updateStrategy: {rollingUpdate: {maxSurge: 1.5}}}}`,
		"spec.updateStrategy.rollingUpdate.maxSurge", true},
	{kds, "maxSurge beyond int32", `{spec: {updateStrategy: {rollingUpdate: {maxSurge: 2147483648}}}}`,
		"spec.updateStrategy.rollingUpdate.maxSurge", true},
	{kds, "partition a string", `{spec: {updateStrategy: {rollingUpdate: {partition: "1"}}}}`,
		"spec.updateStrategy.rollingUpdate.partition", true},
	{kds, "partition beyond int32", `{spec: {updateStrategy: {rollingUpdate: {partition: 2147483648}}}}`,
		"spec.updateStrategy.rollingUpdate.partition", true},
	{kds, "minReadySeconds beyond int32", `{spec: {minReadySeconds: 2147483648}}`, "spec.minReadySeconds", true},
	{kds, "minReadySeconds a string", `{spec: {minReadySeconds: "10"}}`, "spec.minReadySeconds", true},
	{kds, "revisionHistoryLimit -1", `{spec: {revisionHistoryLimit: -1}}`, "spec.revisionHistoryLimit", true},
	{kds, "paused a string", `{spec: {updateStrategy: {rollingUpdate: {paused: "yes"}}}}`,
		"spec.updateStrategy.rollingUpdate.paused", true},
	{kds, "strategy type in lower case", `{spec: {updateStrategy: {type: rollingupdate}}}`, "spec.updateStrategy.type", true},
	{kds, "hostPort in an init container with surge", `{spec: {image: null, template: {spec: {
		initContainers: [{name: init, image: x, restartPolicy: Always, ports: [{containerPort: 80, hostPort: 80}]}],
		containers: [{name: c, image: x}]}}, updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}}}`,
		"spec.updateStrategy.rollingUpdate.maxSurge", false},
	{kds, "selector with an unknown operator", `{spec: {image: null, selector: {matchExpressions: [{key: app, operator: Like, values: [a]}]},
		template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: x}]}}}}`, "spec.selector", true},
	{kds, "selector In without values", `{spec: {image: null, selector: {matchExpressions: [{key: app, operator: In}]},
		template: {metadata: {labels: {app: a}}, spec: {containers: [{name: c, image: x}]}}}}`, "spec.selector", true},
	{kds, "selector label value with a space", `{spec: {image: null, selector: {matchLabels: {app: "a b"}},
		template: {metadata: {labels: {app: "a b"}}, spec: {containers: [{name: c, image: x}]}}}}`, "spec.selector", false},
	{kds, "canary selector with an unknown operator", `{spec: {updateStrategy: {rollingUpdate: {selector: {
		matchExpressions: [{key: zone, operator: Near, values: [a]}]}}}}}`, "spec.updateStrategy.rollingUpdate.selector", false},
	{kds, "template labels empty under a selector", `{spec: {image: null, selector: {matchLabels: {app: a}},
		template: {spec: {containers: [{name: c, image: x}]}}}}`, "spec.template.metadata.labels", true},

	// WorkloadSizer: the target, the resources and their bounds, the runtime, the budget, the Service and Ingress.
	{wls, "name ending in a dash", `{metadata: {name: web-}}`, "metadata.name", true},
	{wls, "targetRef apiVersion apps/v2", `{spec: {targetRef: {apiVersion: apps/v2}}}`, "spec.targetRef.apiVersion", true},
	{wls, "targetRef kind in lower case", `{spec: {targetRef: {kind: deployment}}}`, "spec.targetRef.kind", true},
	{wls, "targetRef name of 254 characters", `{spec: {targetRef: {name: ` + strings.Repeat("w", 254) + `}}}`,
		"spec.targetRef.name", true},
	{wls, "targetRef name not a DNS name", `{spec: {targetRef: {name: Web_1}}}`, "spec.targetRef.name", true},
	{wls, "targetRef without kind", `{spec: {targetRef: {kind: null}}}`, "spec.targetRef.kind", true},
	{wls, "size a string", `{spec: {size: two}}`, "spec.size", true},
	{wls, "size a fraction", `{spec: {size: 2.5}}`, "spec.size", true},
	{wls, "size beyond int32", `{spec: {size: 2147483648}}`, "spec.size", true},
	{wls, "misspelt field", `{spec: {sizee: 3}}`, `unknown field "spec.sizee"`, true},
	{wls, "misspelt nested field", `{spec: {disruption: {profile: None, minAvaliable: 1}}}`,
		`unknown field "spec.disruption.minAvaliable"`, true},
	{wls, "containerName empty", `{spec: {resources: [{containerName: ""}]}}`, "spec.resources[0].containerName", true},
	{wls, "containerName of 64 characters", `{spec: {resources: [{containerName: ` + strings.Repeat("c", 64) + `}]}}`,
		"spec.resources[0].containerName", true},
	{wls, "two entries for one container", `{spec: {resources: [{containerName: app}, {containerName: app}]}}`,
		"spec.resources[1]", true},
	{wls, "33 resource entries", `{spec: {resources: ` + many(33, "{containerName: c%d}") + `}}`, "spec.resources", true},
	{wls, "nine requests", `{spec: {resources: [{containerName: app, requests: ` + manyKeys(9, "example.com/r", "1") + `}]}}`,
		"spec.resources[0].requests", true},
	{wls, "a request that is no quantity", `{spec: {resources: [{containerName: app, requests: {cpu: lots}}]}}`,
		"spec.resources[0].requests", true},
	{wls, "a negative request", `{spec: {resources: [{containerName: app, requests: {cpu: "-1"}}]}}`,
		"spec.resources[0].requests[cpu]", false},
	{wls, "a negative maxAllowed", `{spec: {resources: [{containerName: app, maxAllowed: {memory: "-1Gi"}}]}}`,
		"spec.resources[0].maxAllowed[memory]", false},
	{wls, "maxAllowed a list", `{spec: {resources: [{containerName: app, maxAllowed: ["1"]}]}}`,
		"spec.resources[0].maxAllowed", true},
	{wls, "controlledValues unknown", `{spec: {resources: [{containerName: app, controlledValues: Everything}]}}`,
		"spec.resources[0].controlledValues", true},
	{wls, "runtime without languages", `{spec: {runtime: {memoryHeadroomPercent: 10}}}`, "spec.runtime.languages", true},
	{wls, "runtime language twice", `{spec: {runtime: {languages: [go, go]}}}`, "spec.runtime.languages[1]", true},
	{wls, "memoryHeadroomPercent 91", `{spec: {runtime: {languages: [go], memoryHeadroomPercent: 91}}}`,
		"spec.runtime.memoryHeadroomPercent", true},
	{wls, "memoryHeadroomPercent -1", `{spec: {runtime: {languages: [go], memoryHeadroomPercent: -1}}}`,
		"spec.runtime.memoryHeadroomPercent", true},
	{wls, "minAvailable 101%", `{spec: {disruption: {profile: None, minAvailable: "101%"}}}`,
		"spec.disruption.minAvailable", true},
	{wls, "maxUnavailable a word", `{spec: {disruption: {profile: None, maxUnavailable: one}}}`,
		"spec.disruption.maxUnavailable", true},
	{wls, "minAvailable beyond int32", `{spec: {disruption: {profile: None, minAvailable: 2147483648}}}`,
		"spec.disruption.minAvailable", true},
	{wls, "minAvailable a fraction", `{spec: {disruption: {profile: None, minAvailable: 0.5}}}`,
		"spec.disruption.minAvailable", true},
	{wls, "Service port 65536", `{spec: {expose: {service: {enabled: true, port: 65536}}}}`, "spec.expose.service.port", true},
	{wls, "Service port -1", `{spec: {expose: {service: {enabled: true, port: -1}}}}`, "spec.expose.service.port", true},
	{wls, "Service targetPort 70000", `{spec: {expose: {service: {enabled: true, targetPort: 70000}}}}`,
		"spec.expose.service.targetPort", true},
	{wls, "Service type ExternalName", `{spec: {expose: {service: {enabled: true, type: ExternalName}}}}`,
		"spec.expose.service.type", true},
	{wls, "Ingress host of 254 characters", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, host: ` +
		strings.Repeat("h", 254) + `}}}}`, "spec.expose.ingress.host", true},
	{wls, "Ingress host not a DNS name", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, host: "Web Site!"}}}}`,
		"spec.expose.ingress.host", true},
	{wls, "Ingress path without a leading slash", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, path: api}}}}`,
		"spec.expose.ingress.path", true},
	{wls, "Ingress path of 1025 characters", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, path: /` +
		strings.Repeat("p", 1024) + `}}}}`, "spec.expose.ingress.path", true},
	{wls, "Ingress className not a name", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, className: Nginx_Public}}}}`,
		"spec.expose.ingress.className", true},
	{wls, "Ingress TLS Secret not a name", `{spec: {expose: {service: {enabled: true}, ingress: {enabled: true, host: example.com,
		tlsSecretName: web/tls}}}}`, "spec.expose.ingress.tlsSecretName", true},
	{wls, "template container without an image", `{spec: {targetRef: null, template: {spec: {containers: [{name: app}]}}}}`,
		"spec.template.spec.containers[0].image", false},

	// Pipeline: names, the storage, the steps and their wiring, ports, environment, tolerations, readiness.
	{ipl, "name with capitals", `{metadata: {name: Faces}}`, "metadata.name", true},
	{ipl, "name of 64 characters", `{metadata: {name: ` + strings.Repeat("p", 64) + `}}`, "metadata.name", true},
	{ipl, "step and pipeline names over 63 together", `{metadata: {name: ` + strings.Repeat("p", 50) + `},
		spec: {steps: [{name: abcdefghijklm, image: x}]}}`, "spec.steps[0].name", false},
	{ipl, "steps a map", `{spec: {steps: {a: x}}}`, "spec.steps", true},
	{ipl, "33 steps", `{spec: {steps: ` + many(33, "{name: s%d, image: x}") + `}}`, "spec.steps", true},
	{ipl, "step name of 41 characters", `{spec: {steps: [{name: ` + strings.Repeat("s", 41) + `, image: x}]}}`,
		"spec.steps[0].name", true},
	{ipl, "step name starting with a dash", `{spec: {steps: [{name: "-a", image: x}]}}`, "spec.steps[0].name", true},
	{ipl, "unnamed step", `{spec: {steps: [{name: step-1, image: x}, {image: z}]}}`,
		"spec.steps[1].name", true},
	{ipl, "misspelt step field", `{spec: {steps: [{name: a, imge: x, image: x}]}}`, `unknown field "spec.steps[0].imge"`, true},
	{ipl, "step feeding itself", `{spec: {steps: [{name: a, image: x, next: [a]}, {name: b, image: z}]}}`,
		"spec.steps[0].next[0]", false},
	{ipl, "next step listed twice", `{spec: {steps: [{name: a, image: x, next: [b, b]}, {name: b, image: z}]}}`,
		"spec.steps[0].next[1]", true},
	{ipl, "17 next steps", `{spec: {steps: [{name: a, image: x, next: ` + many(17, "n%d") + `}, {name: b, image: z}]}}`,
		"spec.steps[0].next", true},
	{ipl, "replicas -1", `{spec: {steps: [{name: a, image: x, replicas: -1}]}}`, "spec.steps[0].replicas", true},
	{ipl, "replicas a string", `{spec: {steps: [{name: a, image: x, replicas: "2"}]}}`, "spec.steps[0].replicas", true},
	{ipl, "replicas beyond int32", `{spec: {steps: [{name: a, image: x, replicas: 2147483648}]}}`, "spec.steps[0].replicas", true},
	{ipl, "port 65536", `{spec: {steps: [{name: a, image: x, port: 65536}]}}`, "spec.steps[0].port", true},
	{ipl, "port -1", `{spec: {steps: [{name: a, image: x, port: -1}]}}`, "spec.steps[0].port", true},
	{ipl, "listenPort 0", `{spec: {steps: [{name: a, image: x, args: {listenPort: "0"}}]}}`, "spec.steps[0].args[listenPort]", false},
	{ipl, "listenPort 65536", `{spec: {steps: [{name: a, image: x, args: {listenPort: "65536"}}]}}`,
		"spec.steps[0].args[listenPort]", false},
	{ipl, "65 args", `{spec: {steps: [{name: a, image: x, args: ` + manyKeys(65, "k", "v") + `}]}}`, "spec.steps[0].args", true},
	{ipl, "65 env vars", `{spec: {steps: [{name: a, image: x, env: ` + many(65, "{name: V%d, value: v}") + `}]}}`,
		"spec.steps[0].env", true},
	{ipl, "env var with an empty name", `{spec: {steps: [{name: a, image: x, env: [{name: "", value: v}]}]}}`,
		"spec.steps[0].env[0].name", false},
	{ipl, "env var name with =", `{spec: {steps: [{name: a, image: x, env: [{name: "A=B", value: v}]}]}}`,
		"spec.steps[0].env[0].name", false},
	{ipl, "33 tolerations", `{spec: {steps: [{name: a, image: x, tolerations: ` + many(33, "{key: k%d, operator: Exists}") + `}]}}`,
		"spec.steps[0].tolerations", true},
	{ipl, "toleration with an unknown operator", `{spec: {steps: [{name: a, image: x, tolerations: [{key: gpu, operator: Sometimes}]}]}}`,
		"spec.steps[0].tolerations[0].operator", false},
	{ipl, "toleration Exists with a value", `{spec: {steps: [{name: a, image: x, tolerations: [{key: gpu, operator: Exists, value: "1"}]}]}}`,
		"spec.steps[0].tolerations[0].value", false},
	{ipl, "toleration with an unknown effect", `{spec: {steps: [{name: a, image: x, tolerations: [{key: gpu, operator: Exists, effect: Soon}]}]}}`,
		"spec.steps[0].tolerations[0].effect", false},
	{ipl, "GPU request below its limit", `{spec: {steps: [{name: a, image: x, resources: {requests: {nvidia.com/gpu: "1"},
		limits: {nvidia.com/gpu: "2"}}}]}}`, "spec.steps[0].resources.requests[nvidia.com/gpu]", false},
	{ipl, "request that is no quantity", `{spec: {steps: [{name: a, image: x, resources: {requests: {cpu: fast}}}]}}`,
		"spec.steps[0].resources.requests", true},
	{ipl, "location ending in a dash", `{spec: {steps: [{name: a, image: x, location: gpu-a-}]}}`, "spec.steps[0].location", true},
	{ipl, "model of 1025 characters", `{spec: {steps: [{name: a, image: x, model: ` + strings.Repeat("m", 1025) + `}]}}`,
		"spec.steps[0].model", true},
	{ipl, "model escaping with backslashes", `{spec: {steps: [{name: a, image: x, model: 'faces\..\..\secrets'}]}}`,
		"spec.steps[0].model", false},
	{ipl, "readiness path empty", `{spec: {steps: [{name: a, image: x, readiness: {httpGet: {path: ""}}}]}}`,
		"spec.steps[0].readiness.httpGet.path", true},
	{ipl, "readiness path of 1025 characters", `{spec: {steps: [{name: a, image: x, readiness: {httpGet: {path: /` +
		strings.Repeat("r", 1024) + `}}}]}}`, "spec.steps[0].readiness.httpGet.path", true},
	{ipl, "readiness port 65536", `{spec: {steps: [{name: a, image: x, readiness: {httpGet: {path: /ready, port: 65536}}}]}}`,
		"spec.steps[0].readiness.httpGet.port", true},
	{ipl, "storage without type", `{spec: {modelStorage: {type: null}}}`, "spec.modelStorage.type", true},
	{ipl, "nfs server empty", `{spec: {modelStorage: {csiParameter: {server: ""}}}}`, "spec.modelStorage.csiParameter", true},
	{ipl, "17 csiParameters", `{spec: {modelStorage: {csiParameter: ` + manyKeys(17, "p", "v") + `}}}`,
		"spec.modelStorage.csiParameter", true},
	{ipl, "driver of 254 characters", `{spec: {modelStorage: {driver: ` + strings.Repeat("d", 254) + `}}}`,
		"spec.modelStorage.driver", true},
	{ipl, "capacity that is no quantity", `{spec: {modelStorage: {capacity: ten}}}`, "spec.modelStorage.capacity", true},
	{ipl, "capacity negative", `{spec: {modelStorage: {capacity: "-1Gi"}}}`, "spec.modelStorage.capacity", false},
	{ipl, "capacity zero", `{spec: {modelStorage: {capacity: "0"}}}`, "spec.modelStorage.capacity", false},
	{ipl, "17 mount options", `{spec: {modelStorage: {mountOptions: ` + many(17, "o%d") + `}}}`,
		"spec.modelStorage.mountOptions", true},
	{ipl, "claimName not a name", `{spec: {modelStorage: {type: pvc, csiParameter: null, claimName: Models_1}}}`,
		"spec.modelStorage.claimName", true},
	{ipl, "claimName of 254 characters", `{spec: {modelStorage: {type: pvc, csiParameter: null, claimName: ` +
		strings.Repeat("c", 254) + `}}}`, "spec.modelStorage.claimName", true},
}

// objectName makes a case's object name: the kind's short name and the case, lower case, dashes between words.
func objectName(kind, what string) string {
	short := map[string]string{kds: "kds", wls: "wls", ipl: "ipl"}[kind]
	var b strings.Builder
	b.WriteString(short + "-")
	for _, r := range strings.ToLower(what) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String()[:min(b.Len(), 48)], "-")
}

// TestBadInputIsRefusedWithItsFieldPath creates every bad input in both control planes and checks each answer:
// refused (422 Invalid, or 400 BadRequest for what cannot be decoded) with the field path in the message, or,
// without the webhooks, admitted where the CRD cannot tell.
func TestBadInputIsRefusedWithItsFieldPath(t *testing.T) {
	pair.Serve(t, serveAll)
	if len(badInputs) < 60 {
		t.Fatalf("%d bad inputs; the table keeps at least 60", len(badInputs))
	}
	nsWith, nsWithout := pair.With.Namespace(t, "bad"), pair.Without.Namespace(t, "bad")
	names := map[string]string{}
	var report strings.Builder
	passed := 0
	for _, tc := range badInputs {
		name := objectName(tc.kind, tc.what)
		if other, taken := names[name]; taken {
			t.Fatalf("cases %q and %q make the same object name %s", other, tc.what, name)
		}
		names[name] = tc.what
		ok := t.Run(tc.kind+"/"+tc.what, func(t *testing.T) {
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatalf("patch: %v", err)
			}
			for _, side := range []struct {
				env    *testenv.Env
				ns     string
				refuse bool
				label  string
			}{{pair.With, nsWith, true, "with the webhooks"}, {pair.Without, nsWithout, tc.crd, "with the CRD alone"}} {
				obj := valid(tc.kind, name)
				merge(obj, patch)
				u := &unstructured.Unstructured{Object: obj}
				u.SetNamespace(side.ns)
				err := side.env.Client.Create(context.Background(), u, client.FieldValidation("Strict"))
				switch {
				case !side.refuse && err != nil:
					t.Errorf("%s: refused, want admitted (the CRD cannot check this): %v", side.label, err)
				case side.refuse && err == nil:
					t.Errorf("%s: admitted, want refused naming %s", side.label, tc.path)
				case side.refuse && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
					t.Errorf("%s: got %v (%s), want a 422 Invalid or 400 BadRequest refusal", side.label, err, apierrors.ReasonForError(err))
				case side.refuse && !strings.Contains(err.Error(), tc.path):
					t.Errorf("%s: the refusal does not name %s: %v", side.label, tc.path, err)
				}
			}
		})
		if ok {
			passed++
		}
		crd := "webhook only"
		if tc.crd {
			crd = "refused"
		}
		fmt.Fprintf(&report, "| %s | %s | `%s` | %s |\n", tc.kind, tc.what, tc.path, crd)
	}
	t.Logf("%d of %d bad inputs refused as expected", passed, len(badInputs))
	if out := os.Getenv("KEELSON_BAD_INPUT_TABLE"); out != "" {
		if err := os.WriteFile(filepath.Clean(out), []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
