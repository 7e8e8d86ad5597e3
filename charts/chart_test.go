// Package charts_test tests charts/keelson with the Helm Go SDK: renders for a matrix of values asserted on typed
// objects, the schema and the drain guard, RBAC least privilege, and a server-side dry-run of the render against a
// real apiserver into a namespace that enforces Pod Security "restricted".
package charts_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	chartDir  = "keelson"
	namespace = "keelson-system"
)

var controllers = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

// render installs the chart in Helm's client-only dry-run mode and returns every object it renders, hooks included.
func render(vals map[string]any) ([]*unstructured.Unstructured, error) {
	return renderAs("keelson", namespace, vals)
}

// renderAs renders the chart as render does, as release name in namespace ns.
func renderAs(name, ns string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = name, ns
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	manifest := rel.Manifest
	for _, h := range rel.Hooks {
		manifest += "\n---\n" + h.Manifest
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func mustRender(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

// ofKind converts every rendered object of kind into T.
func ofKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, u := range objs {
		if u.GetKind() != kind {
			continue
		}
		var obj T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
			t.Fatalf("%s %s: %v", kind, u.GetName(), err)
		}
		out = append(out, &obj)
	}
	return out
}

// testHook reports whether an object is made by helm test only (and deleted once the test passes).
func testHook(o metav1.Object) bool { return o.GetAnnotations()["helm.sh/hook"] == "test" }

// controllerOf names the controller an object belongs to ("" for none).
func controllerOf(u *unstructured.Unstructured) string {
	return u.GetLabels()["app.kubernetes.io/name"]
}

// wantKinds are the objects of each kind an enabled controller renders: with cert-manager, a Certificate in place of
// the Secret; with pdbOff, the pipeline controller's budget left out.
func wantKinds(c string, certManager, pdbOff bool) map[string]int {
	// ClusterRoles: the controller's own, and the view and edit roles aggregated into the default ones.
	want := map[string]int{"Deployment": 1, "ServiceAccount": 1, "ClusterRole": 3, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 1, "ValidatingWebhookConfiguration": 1,
		"MutatingWebhookConfiguration": 1, "PodDisruptionBudget": 1, "Secret": 1}
	if certManager {
		delete(want, "Secret")
		want["Certificate"] = 1
	}
	if pdbOff && c == "pipeline-controller" {
		delete(want, "PodDisruptionBudget")
	}
	if c == "pipeline-controller" {
		want["ClusterRole"] = 2 // no edit role by default (TestAggregatedRoles)
	}
	if c == "daemonset-controller" {
		// The selector rule the apiserver enforces itself (files/policies).
		want["ValidatingAdmissionPolicy"], want["ValidatingAdmissionPolicyBinding"] = 1, 1
	}
	return want
}

func TestRenderMatrix(t *testing.T) {
	off := func(keys ...string) map[string]any {
		v := map[string]any{}
		for _, k := range keys {
			v[k] = map[string]any{"enabled": false}
		}
		return v
	}
	for name, tc := range map[string]struct {
		vals    map[string]any
		enabled []string
	}{
		"defaults":                {nil, controllers},
		"daemonset off":           {off("daemonsetController"), []string{"workload-sizer", "pipeline-controller"}},
		"sizer off":               {off("workloadSizer"), []string{"daemonset-controller", "pipeline-controller"}},
		"pipeline off":            {off("pipelineController"), []string{"daemonset-controller", "workload-sizer"}},
		"only the daemonset":      {off("workloadSizer", "pipelineController"), []string{"daemonset-controller"}},
		"all off":                 {off("daemonsetController", "workloadSizer", "pipelineController"), nil},
		"cert-manager":            {map[string]any{"webhooks": map[string]any{"certs": map[string]any{"mode": "certManager"}}}, controllers},
		"one replica each":        {map[string]any{"daemonsetController": map[string]any{"replicas": 1}, "workloadSizer": map[string]any{"replicas": 1}, "pipelineController": map[string]any{"replicas": 1}}, controllers},
		"pdb by minAvailable":     {map[string]any{"workloadSizer": map[string]any{"replicas": 3, "pdb": map[string]any{"minAvailable": 2, "maxUnavailable": nil}}}, controllers},
		"pdb off":                 {map[string]any{"pipelineController": map[string]any{"pdb": map[string]any{"enabled": false}}}, controllers},
		"override per controller": {map[string]any{"workloadSizer": map[string]any{"logLevel": "debug", "image": map[string]any{"tag": "v9"}}}, controllers},
		"crds not kept":           {map[string]any{"crds": map[string]any{"keep": false}}, controllers},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			objs := mustRender(t, tc.vals)
			perController := map[string]map[string]int{}
			for _, u := range objs {
				c := controllerOf(u)
				if perController[c] == nil {
					perController[c] = map[string]int{}
				}
				perController[c][u.GetKind()]++
			}
			certManager := strings.Contains(name, "cert-manager")
			for _, c := range controllers {
				kinds := perController[c]
				if !contains(tc.enabled, c) {
					g.Expect(kinds).To(BeEmpty(), "%s is off but renders objects", c)
					continue
				}
				g.Expect(kinds).To(Equal(wantKinds(c, certManager, strings.Contains(name, "pdb off"))), "objects of %s", c)
			}
			// The uninstall hook's Job carries labels of its own, so it is never taken for one of the controller's pods.
			for _, c := range finalizerControllers {
				hook := perController[c+"-uninstall"]
				if !contains(tc.enabled, c) {
					g.Expect(hook).To(BeEmpty(), "%s is off but has an uninstall hook", c)
					continue
				}
				g.Expect(hook).To(Equal(map[string]int{"Job": 1}), "uninstall hook of %s", c)
			}
			g.Expect(perController).NotTo(HaveKey("daemonset-controller-uninstall"), "the DaemonSet controller has no finalizer")
			crds := ofKind[unstructured.Unstructured](t, objs, "CustomResourceDefinition")
			g.Expect(crds).To(HaveLen(len(tc.enabled)), "one CRD per enabled controller")
			for _, crd := range crds {
				keep := crd.GetAnnotations()["helm.sh/resource-policy"] == "keep"
				g.Expect(keep).To(Equal(!strings.Contains(name, "not kept")), "keep annotation on %s", crd.GetName())
			}
			for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
				checkDeployment(g, d, certManager)
			}
			for _, p := range ofKind[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget") {
				g.Expect(*p.Spec.UnhealthyPodEvictionPolicy).To(Equal(policyv1.AlwaysAllow))
				g.Expect(p.Spec.MinAvailable == nil).NotTo(Equal(p.Spec.MaxUnavailable == nil), "exactly one of the two")
			}
			for _, w := range ofKind[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration") {
				for _, h := range w.Webhooks {
					g.Expect(h.NamespaceSelector.MatchExpressions[0].Values).To(ConsistOf("kube-system", namespace))
					g.Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
					g.Expect(h.ClientConfig.Service.Namespace).To(Equal(namespace))
				}
			}
		})
	}
}

func checkDeployment(g Gomega, d *appsv1.Deployment, certManager bool) {
	g.Expect(*d.Spec.Replicas).To(BeNumerically(">=", 1))
	g.Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(0))
	g.Expect(d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()).To(Equal(1))
	pod := d.Spec.Template.Spec
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	c := pod.Containers[0]
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(c.Args).To(ContainElement("--leader-election-retry-period=1s"))
	g.Expect(c.Args).To(ContainElements("--kube-api-qps=50", "--kube-api-burst=100"))
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	if certManager {
		g.Expect(c.Args).NotTo(ContainElement("--webhook-cert-rotation"))
		g.Expect(volumes).To(ContainElement("webhook-certs"), "cert-manager's certificate is read from the mounted Secret")
	} else {
		g.Expect(c.Args).To(ContainElement("--webhook-cert-rotation"))
		// The own CA's certificate reaches the webhook server in memory: a mount would only add the kubelet's delay.
		g.Expect(volumes).NotTo(ContainElement("webhook-certs"))
	}
	g.Expect(pod.Affinity.PodAntiAffinity).NotTo(BeNil(), "replicas spread across nodes by default")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestOverridesReachOnlyTheirController(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"workloadSizer": map[string]any{"logLevel": "debug", "image": map[string]any{"tag": "v9"},
		"podAnnotations": map[string]any{"example.com/team": "platform"}, "kubeAPI": map[string]any{"qps": 200}}})
	for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
		c := d.Spec.Template.Spec.Containers[0]
		if d.Name == "keelson-workload-sizer" {
			g.Expect(c.Image).To(Equal("docker.io/keelson/workload-sizer:v9"))
			g.Expect(c.Args).To(ContainElement("--log-level=debug"))
			g.Expect(c.Args).To(ContainElements("--kube-api-qps=200", "--kube-api-burst=100"), "an override keeps global's other fields")
			g.Expect(d.Spec.Template.Annotations).To(Equal(map[string]string{"example.com/team": "platform"}))
		} else {
			g.Expect(c.Image).To(HaveSuffix(":0.1.0"))
			g.Expect(c.Args).To(ContainElements("--log-level=info", "--kube-api-qps=50"))
			g.Expect(d.Spec.Template.Annotations).To(BeEmpty())
		}
	}
}

func TestSchemaRejectsTypos(t *testing.T) {
	for _, vals := range []map[string]any{
		{"daemonsetController": map[string]any{"enable": true}},
		{"workloadSizer": map[string]any{"replicas": "two"}},
		{"webhooks": map[string]any{"certs": map[string]any{"mode": "letsencrypt"}}},
		{"pipelineController": map[string]any{"pdb": map[string]any{"minAvailable": "lots"}}},
		{"global": map[string]any{"kubeAPI": map[string]any{"qps": 0}}},
		{"daemonsetController": map[string]any{"kubeAPI": map[string]any{"burst": 1.5}}},
	} {
		_, err := render(vals)
		if err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("values %v: got %v, want a schema error", vals, err)
		}
	}
	if _, err := render(map[string]any{"global": map[string]any{"somethingNew": true}}); err != nil {
		t.Errorf("global must stay open for forward compatibility: %v", err)
	}
}

func TestBlockingBudgetIsRefused(t *testing.T) {
	for _, pdb := range []map[string]any{
		{"minAvailable": 2, "maxUnavailable": nil},
		{"minAvailable": "100%", "maxUnavailable": nil},
		{"maxUnavailable": 0},
	} {
		_, err := render(map[string]any{"daemonsetController": map[string]any{"replicas": 2, "pdb": pdb}})
		if err == nil || !strings.Contains(err.Error(), "every node drain would wait forever") {
			t.Errorf("pdb %v: got %v, want the drain guard", pdb, err)
		}
		pdb["allowBlockingDrains"] = true
		if _, err := render(map[string]any{"daemonsetController": map[string]any{"replicas": 2, "pdb": pdb}}); err != nil {
			t.Errorf("pdb %v with allowBlockingDrains: %v", pdb, err)
		}
	}
}

// RBAC: no wildcards, and Secrets only in the release namespace, and there only the chart's own Secret, by name.
func TestRBACIsLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, nil)
	for _, r := range ofKind[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		for _, rule := range r.Rules {
			for _, list := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups} {
				g.Expect(list).NotTo(ContainElement("*"), "wildcard in %s", r.Name)
			}
			g.Expect(rule.Resources).NotTo(ContainElement("secrets"), "cluster-wide Secret access in %s", r.Name)
			if contains(rule.APIGroups, "admissionregistration.k8s.io") {
				// Its own webhook configurations only, named like the ClusterRole itself.
				g.Expect(rule.ResourceNames).To(Equal([]string{r.Name}), "webhook configurations of others writable by %s", r.Name)
			}
		}
	}
	// With cert-manager, cainjector writes the bundles: the controllers may touch no webhook configuration at all.
	certManager := mustRender(t, map[string]any{"webhooks": map[string]any{"certs": map[string]any{"mode": "certManager"}}})
	for _, r := range ofKind[rbacv1.ClusterRole](t, certManager, "ClusterRole") {
		for _, rule := range r.Rules {
			g.Expect(rule.APIGroups).NotTo(ContainElement("admissionregistration.k8s.io"), "%s in cert-manager mode", r.Name)
		}
	}
	for _, r := range ofKind[rbacv1.Role](t, objs, "Role") {
		if r.Labels["app.kubernetes.io/component"] == "test" {
			continue // TestHelmTestProvesTheWebhookPath
		}
		g.Expect(r.Namespace).To(Equal(namespace))
		for _, rule := range r.Rules {
			if contains(rule.APIGroups, "apps") {
				// The uninstall hook scales the controller's own Deployment, and those of the other controllers
				// whose hooks run beside it (a failed hook starts them again); no one else's.
				g.Expect(rule.ResourceNames).To(ContainElement(r.Name))
				for _, name := range rule.ResourceNames {
					g.Expect(name).To(BeElementOf("keelson-workload-sizer", "keelson-pipeline-controller"),
						"Deployments of others reachable by %s", r.Name)
				}
			}
			if contains(rule.Resources, "secrets") {
				// No namespace-wide list or watch: the process watches its Secret with a metadata.name field selector.
				g.Expect(rule.ResourceNames).To(HaveLen(1), "only the controller's own certificate Secret")
				g.Expect(rule.Verbs).To(ConsistOf("list", "watch", "update"))
			}
		}
	}
}

func TestRBACIsExactlyWhatEachControllerUses(t *testing.T) {
	shared := map[string]string{
		"/events":                                   "create,patch",
		"events.k8s.io/events":                      "create,get,patch", // get: an event seen again counts up its series
		"authentication.k8s.io/tokenreviews":        "create",
		"authorization.k8s.io/subjectaccessreviews": "create",
		// Its own two, by name (TestRBACIsLeastPrivilege), and only in the self-signed mode.
		"admissionregistration.k8s.io/mutatingwebhookconfigurations":   "list,watch,update",
		"admissionregistration.k8s.io/validatingwebhookconfigurations": "list,watch,update",
	}
	want := map[string]map[string]string{
		"keelson-daemonset-controller": {
			"/nodes": "get,list,watch", "/pods": "create,delete,get,list,patch,watch", // patch: adoption, release, updates in place
			"/pods/status":                     "patch", // the in-place readiness gate
			"apps/controllerrevisions":         "create,delete,get,list,patch,watch",
			"daemonset.keelson.dev/daemonsets": "get,list,watch", "daemonset.keelson.dev/daemonsets/status": "patch",
		},
		"keelson-workload-sizer": {
			"/pods": "get,list,watch", "/pods/resize": "update", "/services": "create,delete,get,list,update,watch",
			"/pods/eviction":   "create", // a pod whose in-place resize cannot fit its node is evicted alone
			"apps/deployments": "create,get,list,patch,watch", "apps/statefulsets": "create,get,list,patch,watch",
			"networking.k8s.io/ingresses":               "create,delete,get,list,update,watch",
			"policy/poddisruptionbudgets":               "create,delete,get,list,update,watch",
			"autoscaling/horizontalpodautoscalers":      "get,list,watch", // an HPA on a target is reported, not fought
			"autoscaling.k8s.io/verticalpodautoscalers": "list",           // a VPA that updates the same containers is reported
			"sizer.keelson.dev/workloadsizers":          "get,list,patch,watch", "sizer.keelson.dev/workloadsizers/status": "patch",
		},
		"keelson-pipeline-controller": {
			"/nodes": "get,list,watch", "/pods": "get,list,watch",
			"/events":                 "create,list,patch", // list: the events of a pod stuck in ContainerCreating say which volume it waits for
			"/persistentvolumeclaims": "create,delete,get,list,patch,watch", "/persistentvolumes": "create,delete,get,list,patch,watch",
			"/services": "create,delete,get,list,patch,watch", "apps/deployments": "create,delete,get,list,patch,watch",
			"autoscaling/horizontalpodautoscalers": "get,list,watch",                                                          // a step an HPA scales leaves it the replicas
			"storage.k8s.io/storageclasses":        "get",                                                                     // the webhook refuses a cache class that binds Immediate
			"inference.keelson.dev/pipelines":      "get,list,patch,watch", "inference.keelson.dev/pipelines/status": "patch", // patch: the finalizer; status/patch: the whole status
		},
	}
	for _, r := range ofKind[rbacv1.ClusterRole](t, mustRender(t, nil), "ClusterRole") {
		if r.Labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" {
			continue // a namespace user's role (TestAggregatedRoles), not the controller's
		}
		got := map[string]string{}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					got[g+"/"+res] = strings.Join(rule.Verbs, ",")
				}
			}
		}
		expected := map[string]string{}
		for k, v := range shared {
			expected[k] = v
		}
		for k, v := range want[r.Name] {
			expected[k] = v
		}
		if diff := cmp.Diff(expected, got); diff != "" {
			t.Errorf("ClusterRole %s (-want +got):\n%s", r.Name, diff)
		}
	}

	// Roles in the release namespace: the Lease, the own certificate Secret and, for the uninstall hook of a
	// controller with finalizers, its own Deployment and that Deployment's scale. Keys are "group/resource@names".
	// Its own Lease only, by name: leader election gets, creates and renews it (a create cannot be scoped by name).
	roleShared := map[string]string{
		"coordination.k8s.io/leases@": "create",
	}
	hook := map[string]string{"apps/deployments@%s": "get", "apps/deployments/scale@%s": "update,patch"}
	for _, r := range ofKind[rbacv1.Role](t, mustRender(t, nil), "Role") {
		if r.Labels["app.kubernetes.io/component"] == "test" {
			continue // TestHelmTestProvesTheWebhookPath
		}
		got := map[string]string{}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					got[g+"/"+res+"@"+strings.Join(rule.ResourceNames, ",")] = strings.Join(rule.Verbs, ",")
				}
			}
		}
		expected := map[string]string{"/secrets@" + r.Name + "-webhook-tls": "list,watch,update",
			"coordination.k8s.io/leases@" + r.Name: "get,update"}
		for k, v := range roleShared {
			expected[k] = v
		}
		// The hook's own Deployment, then the other controllers' with finalizers: a failed hook starts them again.
		siblings := map[string]string{"keelson-workload-sizer": "keelson-pipeline-controller",
			"keelson-pipeline-controller": "keelson-workload-sizer"}
		if r.Name != "keelson-daemonset-controller" {
			for k, v := range hook {
				expected[fmt.Sprintf(k, r.Name+","+siblings[r.Name])] = v
			}
		}
		if diff := cmp.Diff(expected, got); diff != "" {
			t.Errorf("Role %s (-want +got):\n%s", r.Name, diff)
		}
	}
}
