package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// deployment returns the rendered Deployment of one controller.
func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
		if d.Labels["app.kubernetes.io/name"] == name {
			return d
		}
	}
	t.Fatalf("no Deployment of %s", name)
	return nil
}

// The values users expect reach the controller they are set for, and global ones reach every controller.
func TestUserValuesReachTheirController(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{
		"commonLabels": map[string]any{"team": "platform"},
		"global": map[string]any{
			"podLabels":            map[string]any{"tier": "control"},
			"revisionHistoryLimit": 2,
		},
		"workloadSizer": map[string]any{
			"extraArgs":         []any{"--zap-devel=false"},
			"extraEnv":          []any{map[string]any{"name": "GOMEMLIMIT", "value": "200MiB"}},
			"extraVolumes":      []any{map[string]any{"name": "ca", "configMap": map[string]any{"name": "corp-ca"}}},
			"extraVolumeMounts": []any{map[string]any{"name": "ca", "mountPath": "/etc/corp-ca"}},
			"livenessProbe":     map[string]any{"periodSeconds": 30, "failureThreshold": 6},
			"image":             map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
			"serviceAccount":    map[string]any{"annotations": map[string]any{"iam.example.com/role": "sizer"}},
			"ports":             map[string]any{"webhook": 9443},
		},
	})
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			continue
		}
		g.Expect(u.GetLabels()).To(HaveKeyWithValue("team", "platform"), "commonLabels on %s %s", u.GetKind(), u.GetName())
	}
	sizer := deployment(t, objs, "workload-sizer")
	c := sizer.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElements("--zap-devel=false", "--webhook-port=9443"))
	g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", Value: "200MiB"}))
	g.Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "ca", MountPath: "/etc/corp-ca"}))
	g.Expect(sizer.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Name", "ca")))
	g.Expect(c.LivenessProbe.PeriodSeconds).To(Equal(int32(30)))
	g.Expect(c.LivenessProbe.FailureThreshold).To(Equal(int32(6)))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"), "an override keeps the chart's check")
	g.Expect(c.Image).To(Equal("docker.io/keelson/workload-sizer@sha256:" + strings.Repeat("ab", 32)))
	g.Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "webhook", ContainerPort: 9443, Protocol: corev1.ProtocolTCP}))

	for _, name := range controllers {
		d := deployment(t, objs, name)
		g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("tier", "control"), name)
		g.Expect(*d.Spec.RevisionHistoryLimit).To(Equal(int32(2)), name)
		if name == "workload-sizer" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		g.Expect(c.Args).NotTo(ContainElement("--zap-devel=false"), "%s got the sizer's args", name)
		g.Expect(c.Args).To(ContainElement("--webhook-port=10250"), "%s: the default webhook port", name)
		g.Expect(c.LivenessProbe.PeriodSeconds).To(Equal(int32(10)), name)
		g.Expect(c.Image).To(HaveSuffix(":0.1.0"), name)
	}
	for _, sa := range ofKind[corev1.ServiceAccount](t, objs, "ServiceAccount") {
		if sa.Labels["app.kubernetes.io/component"] == "test" {
			continue
		}
		if sa.Name == "keelson-workload-sizer" {
			g.Expect(sa.Annotations).To(HaveKeyWithValue("iam.example.com/role", "sizer"))
		} else {
			g.Expect(sa.Annotations).To(BeEmpty(), sa.Name)
		}
	}
}

// The model fetches' proxy and CA bundle reach the pipeline controller (which passes them to the fetches only), each
// variable only when set; no proxy, no variable.
func TestModelFetchProxy(t *testing.T) {
	g := NewWithT(t)
	proxyEnv := func(c corev1.Container) []corev1.EnvVar {
		var out []corev1.EnvVar
		for _, e := range c.Env {
			if strings.Contains(e.Name, "PROXY") {
				out = append(out, e)
			}
		}
		return out
	}
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	objs := mustRender(t, map[string]any{"pipelineController": map[string]any{"modelCache": map[string]any{
		"proxy":    map[string]any{"httpsProxy": "http://proxy.corp:3128", "noProxy": ".svc,.corp,10.0.0.0/8"},
		"caBundle": pem}}})
	g.Expect(proxyEnv(deployment(t, objs, "pipeline-controller").Spec.Template.Spec.Containers[0])).To(Equal([]corev1.EnvVar{
		{Name: "KEELSON_MODEL_FETCH_HTTPS_PROXY", Value: "http://proxy.corp:3128"},
		{Name: "KEELSON_MODEL_FETCH_NO_PROXY", Value: ".svc,.corp,10.0.0.0/8"}}))
	g.Expect(deployment(t, objs, "pipeline-controller").Spec.Template.Spec.Containers[0].Env).To(
		ContainElement(corev1.EnvVar{Name: "KEELSON_MODEL_FETCH_CA_BUNDLE", Value: pem}))
	for _, name := range []string{"daemonset-controller", "workload-sizer"} {
		g.Expect(proxyEnv(deployment(t, objs, name).Spec.Template.Spec.Containers[0])).To(BeEmpty(), name)
	}
	g.Expect(proxyEnv(deployment(t, mustRender(t, nil), "pipeline-controller").Spec.Template.Spec.Containers[0])).To(BeEmpty())
}

// The hold's size reaches the pipeline controller: the defaults, or the operator's.
func TestModelHoldSize(t *testing.T) {
	g := NewWithT(t)
	env := func(objs []*unstructured.Unstructured) []corev1.EnvVar {
		return deployment(t, objs, "pipeline-controller").Spec.Template.Spec.Containers[0].Env
	}
	g.Expect(env(mustRender(t, nil))).To(ContainElements(corev1.EnvVar{Name: "KEELSON_MODEL_HOLD_CPU", Value: "10m"},
		corev1.EnvVar{Name: "KEELSON_MODEL_HOLD_MEMORY", Value: "64Mi"}))
	sized := mustRender(t, map[string]any{"pipelineController": map[string]any{"modelCache": map[string]any{
		"hold": map[string]any{"cpu": "100m", "memory": "128Mi"}}}})
	g.Expect(env(sized)).To(ContainElements(corev1.EnvVar{Name: "KEELSON_MODEL_HOLD_CPU", Value: "100m"},
		corev1.EnvVar{Name: "KEELSON_MODEL_HOLD_MEMORY", Value: "128Mi"}))
}

// A ServiceAccount the user brings is bound, not created; names follow nameOverride and fullnameOverride.
func TestServiceAccountAndNames(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"pipelineController": map[string]any{
		"serviceAccount": map[string]any{"create": false, "name": "models-reader"}}})
	for _, sa := range ofKind[corev1.ServiceAccount](t, objs, "ServiceAccount") {
		g.Expect(sa.Name).NotTo(Equal("keelson-pipeline-controller"), "a ServiceAccount the user brings is not created")
	}
	g.Expect(deployment(t, objs, "pipeline-controller").Spec.Template.Spec.ServiceAccountName).To(Equal("models-reader"))
	bound := 0
	for _, b := range ofKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		if b.Subjects[0].Name == "models-reader" {
			bound++
		}
	}
	for _, b := range ofKind[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		if b.Subjects[0].Name == "models-reader" {
			bound++
		}
	}
	g.Expect(bound).To(Equal(2), "the ClusterRoleBinding and the RoleBinding name the user's ServiceAccount")

	_, err := render(map[string]any{"pipelineController": map[string]any{"serviceAccount": map[string]any{"create": false}}})
	g.Expect(err).To(MatchError(ContainSubstring("pipelineController.serviceAccount: with create false, name must name")))

	for vals, prefix := range map[string]string{"fullnameOverride": "kx", "nameOverride": "keelson-edge"} {
		value := map[string]string{"fullnameOverride": "kx", "nameOverride": "edge"}[vals]
		objs := mustRender(t, map[string]any{vals: value})
		for _, name := range controllers {
			d := deployment(t, objs, name)
			g.Expect(d.Name).To(Equal(prefix+"-"+name), vals)
			g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--leader-election-id="+prefix+"-"+name), vals)
		}
	}
}

// In the node's network, each controller needs ports of its own, and rolls without a surge pod.
func TestHostNetwork(t *testing.T) {
	g := NewWithT(t)
	own := func(base int) map[string]any {
		return map[string]any{"ports": map[string]any{"webhook": base, "metrics": base + 1, "health": base + 2}}
	}
	objs := mustRender(t, map[string]any{"global": map[string]any{"hostNetwork": true},
		"daemonsetController": own(9440), "workloadSizer": own(9450), "pipelineController": own(9460)})
	for _, name := range controllers {
		d := deployment(t, objs, name)
		g.Expect(d.Spec.Template.Spec.HostNetwork).To(BeTrue(), name)
		g.Expect(d.Spec.Template.Spec.DNSPolicy).To(Equal(corev1.DNSClusterFirstWithHostNet), name)
		g.Expect(d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()).To(Equal(0), "%s: a surge pod could not start beside an old one", name)
		g.Expect(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(1), name)
	}
	for what, tc := range map[string]struct {
		vals map[string]any
		want string
	}{
		"the kubelet's port": {map[string]any{"global": map[string]any{"hostNetwork": true}},
			"daemonsetController.ports.webhook: with hostNetwork, port 10250 is the kubelet's port on the node"},
		"kube-proxy's port": {map[string]any{"global": map[string]any{"hostNetwork": true},
			"daemonsetController": map[string]any{"ports": map[string]any{"webhook": 9440, "metrics": 10249, "health": 9442}}},
			"daemonsetController.ports.metrics: with hostNetwork, port 10249 is kube-proxy's metrics port"},
		"a privileged port": {map[string]any{"global": map[string]any{"hostNetwork": true},
			"daemonsetController": map[string]any{"ports": map[string]any{"webhook": 443, "metrics": 9441, "health": 9442}}},
			"daemonsetController.ports.webhook: with hostNetwork, port 443 is privileged"},
		"a port shared by two controllers": {map[string]any{"global": map[string]any{"hostNetwork": true},
			"daemonsetController": own(9440), "workloadSizer": own(9450), "pipelineController": own(9451)},
			"pipelineController.ports.metrics: with hostNetwork, port 9452 is already used by workloadSizer.ports.health"},
		"one pod's ports": {map[string]any{"workloadSizer": map[string]any{"ports": map[string]any{"metrics": 8081}}},
			"workloadSizer.ports: webhook (10250), metrics (8081) and health (8081) must differ"},
	} {
		_, err := render(tc.vals)
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), what)
	}
}

// With networkPolicy on, each controller's pods take traffic only on their three ports (the webhook's and the
// metrics' from the peers the values name) and send only DNS and the apiserver's ports, to the peers the values name.
func TestNetworkPolicy(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ofKind[networkingv1.NetworkPolicy](t, mustRender(t, nil), "NetworkPolicy")).To(BeEmpty(), "off by default")
	apiserver := map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/28"}}
	prometheus := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
	proxy := map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.1.0.5/32"}}},
		"ports": []any{map[string]any{"port": 3128, "protocol": "TCP"}}}
	objs := mustRender(t, map[string]any{"networkPolicy": map[string]any{"enabled": true,
		"webhookFrom": []any{apiserver}, "metricsFrom": []any{prometheus},
		"egress": map[string]any{"apiServerTo": []any{apiserver}, "extra": []any{proxy}}}})
	pols := ofKind[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	g.Expect(pols).To(HaveLen(len(controllers)))
	for _, p := range pols {
		g.Expect(p.Namespace).To(Equal(namespace))
		g.Expect(p.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		g.Expect(p.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/instance", "keelson"))
		ports := map[string][]networkingv1.NetworkPolicyPeer{}
		for _, in := range p.Spec.Ingress {
			g.Expect(in.Ports).To(HaveLen(1), p.Name)
			ports[in.Ports[0].Port.String()] = in.From
		}
		g.Expect(ports).To(HaveLen(3), p.Name)
		g.Expect(ports["webhook"]).To(HaveLen(1))
		g.Expect(ports["webhook"][0].IPBlock.CIDR).To(Equal("10.0.0.0/28"), "the webhook from the apiserver only")
		g.Expect(ports["metrics"][0].NamespaceSelector.MatchLabels).To(HaveKeyWithValue("kubernetes.io/metadata.name", "monitoring"))
		g.Expect(ports["health"]).To(BeEmpty(), "the kubelet's probes come from the node")

		g.Expect(p.Spec.Egress).To(HaveLen(3), p.Name)
		var dns, api []string
		for _, port := range p.Spec.Egress[0].Ports {
			dns = append(dns, string(*port.Protocol)+"/"+port.Port.String())
		}
		g.Expect(dns).To(ConsistOf("UDP/53", "TCP/53"))
		for _, port := range p.Spec.Egress[1].Ports {
			api = append(api, port.Port.String())
		}
		g.Expect(api).To(ConsistOf("443", "6443"), "the apiserver as pods reach it, after the Service's translation")
		g.Expect(p.Spec.Egress[1].To).To(HaveLen(1))
		g.Expect(p.Spec.Egress[1].To[0].IPBlock.CIDR).To(Equal("10.0.0.0/28"))
		g.Expect(p.Spec.Egress[2].Ports[0].Port.IntValue()).To(Equal(3128), "the extra rule")
	}
	// Egress may be left open.
	open := mustRender(t, map[string]any{"networkPolicy": map[string]any{"enabled": true, "egress": map[string]any{"enabled": false}}})
	for _, p := range ofKind[networkingv1.NetworkPolicy](t, open, "NetworkPolicy") {
		g.Expect(p.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
		g.Expect(p.Spec.Egress).To(BeEmpty())
	}
}

// The top level of the values is closed: a misspelt section fails with its name, instead of being ignored.
func TestSchemaTopLevelIsClosed(t *testing.T) {
	for _, typo := range []string{"daemonSetController", "webhook", "workloadsizer"} {
		_, err := render(map[string]any{typo: map[string]any{"enabled": false}})
		if err == nil || !strings.Contains(err.Error(), typo) {
			t.Errorf("%s: got %v, want a schema error naming it", typo, err)
		}
	}
	for _, bad := range []map[string]any{
		{"global": map[string]any{"image": map[string]any{"digest": "latest"}}},
		{"workloadSizer": map[string]any{"extraArgs": []any{"zap-devel"}}},
		{"global": map[string]any{"ports": map[string]any{"webhook": 70000}}},
		{"fullnameOverride": "Not_A_Name"},
	} {
		if _, err := render(bad); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("values %v: got %v, want a schema error", bad, err)
		}
	}
}

// Namespace users get the kinds through the default view, edit and admin roles; the toggle removes that.
func TestAggregatedRoles(t *testing.T) {
	g := NewWithT(t)
	aggregated := func(objs []*unstructured.Unstructured) map[string]*rbacv1.ClusterRole {
		out := map[string]*rbacv1.ClusterRole{}
		for _, r := range ofKind[rbacv1.ClusterRole](t, objs, "ClusterRole") {
			if r.Labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" {
				out[r.Name] = r
			}
		}
		return out
	}
	roles := aggregated(mustRender(t, nil))
	g.Expect(roles).To(HaveLen(5))
	g.Expect(roles).NotTo(HaveKey("keelson-pipeline-controller-edit"),
		"a Pipeline makes a cluster-scoped PersistentVolume: namespace editors may not write them by default")
	roles = aggregated(mustRender(t, map[string]any{"rbac": map[string]any{"aggregatePipelineEdit": true}}))
	g.Expect(roles).To(HaveLen(6))
	view := roles["keelson-workload-sizer-view"]
	g.Expect(view.Labels).To(HaveKeyWithValue("rbac.authorization.k8s.io/aggregate-to-view", "true"))
	g.Expect(view.Rules[0].Verbs).To(ConsistOf("get", "list", "watch"))
	g.Expect(view.Rules[0].Resources).To(ConsistOf("workloadsizers", "workloadsizers/status", "workloadsizers/scale"))
	edit := roles["keelson-pipeline-controller-edit"]
	g.Expect(edit.Labels).NotTo(HaveKey("rbac.authorization.k8s.io/aggregate-to-view"), "view users must not write")
	g.Expect(edit.Rules[0].APIGroups).To(ConsistOf("inference.keelson.dev"))
	g.Expect(edit.Rules[0].Verbs).To(ConsistOf("create", "update", "patch", "delete", "deletecollection"))
	g.Expect(roles["keelson-workload-sizer-edit"].Rules).To(HaveLen(2), "kubectl scale needs the scale subresource")

	g.Expect(aggregated(mustRender(t, map[string]any{"rbac": map[string]any{"aggregateToDefaultRoles": false}}))).To(BeEmpty())
	g.Expect(aggregated(mustRender(t, map[string]any{"daemonsetController": map[string]any{"enabled": false}}))).
		NotTo(HaveKey("keelson-daemonset-controller-view"), "a disabled kind is not offered")
}

// Webhook selectors from values narrow the webhooks; the chart's own exclusions stay.
func TestWebhookSelectors(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"webhooks": map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"keelson.dev/managed": "true"}},
		"objectSelector":    map[string]any{"matchExpressions": []any{map[string]any{"key": "skip", "operator": "DoesNotExist"}}},
	}})
	hooks := ofKind[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration")
	g.Expect(hooks).To(HaveLen(3))
	for _, w := range hooks {
		for _, h := range w.Webhooks {
			g.Expect(h.NamespaceSelector.MatchLabels).To(HaveKeyWithValue("keelson.dev/managed", "true"))
			g.Expect(h.NamespaceSelector.MatchExpressions[0].Values).To(ConsistOf("kube-system", namespace))
			g.Expect(h.ObjectSelector.MatchExpressions).To(HaveLen(1))
		}
	}
}

// The fetcher webhook sees only the pods of Pipeline steps and never blocks one (nor holds it long), whatever the
// values say of the others; the values' object selector, written for the kinds' objects, does not reach it.
func TestFetcherWebhookSeesStepPodsAndNeverBlocks(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"webhooks": map[string]any{
		"failurePolicy":  "Fail",
		"objectSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "skip", "operator": "DoesNotExist"}}},
	}})
	var fetcher []admissionregistrationv1.MutatingWebhook
	for _, w := range ofKind[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration") {
		for _, h := range w.Webhooks {
			if slices.Contains(h.Rules[0].Resources, "pods") {
				fetcher = append(fetcher, h)
				continue
			}
			if slices.Contains(h.Rules[0].Resources, "deployments") {
				continue // TestContainerStubWebhookSeesOnlyStubs
			}
			g.Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Fail), "%s follows the values", h.Name)
		}
	}
	g.Expect(fetcher).To(HaveLen(1))
	h := fetcher[0]
	g.Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	g.Expect(h.Rules[0].Operations).To(ConsistOf(admissionregistrationv1.Create))
	g.Expect(h.ObjectSelector.MatchExpressions).To(ConsistOf(
		metav1.LabelSelectorRequirement{Key: "inference.keelson.dev/pipeline", Operator: metav1.LabelSelectorOpExists}))
	g.Expect(*h.TimeoutSeconds).To(BeNumerically("<=", 3))
	g.Expect(h.NamespaceSelector.MatchExpressions[0].Values).To(ConsistOf("kube-system", namespace))
}

// helm test proves the path apiserver → webhook → controller: each controller's test pod dry-runs objects of its
// kind in tests.admissionNamespace, as a ServiceAccount of its own (the webhooks skip the controller's) allowed only
// to create that kind there; its pod is admitted where a quota requires limits and opts out of mesh sidecars.
func TestHelmTestProvesTheWebhookPath(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, nil)
	kinds := map[string]string{"daemonset-controller": "daemonset.keelson.dev/daemonsets",
		"workload-sizer": "sizer.keelson.dev/workloadsizers", "pipeline-controller": "inference.keelson.dev/pipelines"}
	pods := map[string]*corev1.Pod{}
	for _, p := range ofKind[corev1.Pod](t, objs, "Pod") {
		g.Expect(testHook(p)).To(BeTrue())
		pods[strings.TrimSuffix(p.Labels["app.kubernetes.io/name"], "-test")] = p
	}
	g.Expect(pods).To(HaveLen(len(controllers)))
	roles := map[string]*rbacv1.Role{}
	for _, r := range ofKind[rbacv1.Role](t, objs, "Role") {
		if r.Labels["app.kubernetes.io/component"] == "test" {
			g.Expect(testHook(r)).To(BeFalse(), "helm test --logs fails on a test hook that is no pod")
			roles[r.Name] = r
		}
	}
	for name, p := range pods {
		full := "keelson-" + name
		g.Expect(p.Spec.ServiceAccountName).To(Equal(full+"-test"), "not the controller's own: the webhooks skip it")
		g.Expect(p.Annotations).To(HaveKeyWithValue("helm.sh/hook-delete-policy", "before-hook-creation"),
			"kept after the test, for helm test --logs")
		c := p.Spec.Containers[0]
		g.Expect(c.Args).To(ConsistOf("--check-ready-url=http://"+full+"."+namespace+".svc:8081/readyz",
			"--check-admission-namespace=default"))
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceCPU), "a quota requiring limits must admit it")
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
		g.Expect(p.Annotations).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
		g.Expect(p.Labels).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
		r := roles[full+"-test"]
		g.Expect(r).NotTo(BeNil(), name)
		g.Expect(r.Namespace).To(Equal("default"))
		g.Expect(r.Rules).To(HaveLen(1))
		g.Expect(r.Rules[0].APIGroups[0] + "/" + r.Rules[0].Resources[0]).To(Equal(kinds[name]))
		g.Expect(r.Rules[0].Verbs).To(ConsistOf("create"))
	}
	// Readiness only, with no ServiceAccount, Role or token, where the webhooks would not see the dry runs: the
	// value empty, a namespace they spare (a release in default keeps the default value), a namespace selector whose
	// labels the namespace may lack, an object selector with expressions.
	for what, vals := range map[string]map[string]any{
		"empty":                     {"tests": map[string]any{"admissionNamespace": ""}},
		"the release namespace":     {"tests": map[string]any{"admissionNamespace": namespace}},
		"kube-system":               {"tests": map[string]any{"admissionNamespace": "kube-system"}},
		"a namespace selector":      {"webhooks": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"keelson": "on"}}}},
		"an object selector's rule": {"webhooks": map[string]any{"objectSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "skip", "operator": "DoesNotExist"}}}}},
	} {
		objs := mustRender(t, vals)
		for _, p := range ofKind[corev1.Pod](t, objs, "Pod") {
			g.Expect(p.Spec.Containers[0].Args).To(HaveLen(1), what)
			g.Expect(*p.Spec.AutomountServiceAccountToken).To(BeFalse(), what)
		}
		for _, r := range ofKind[rbacv1.Role](t, objs, "Role") {
			g.Expect(r.Labels).NotTo(HaveKeyWithValue("app.kubernetes.io/component", "test"), what)
		}
	}
	// An object selector's labels go on the dry runs' objects.
	objs = mustRender(t, map[string]any{"webhooks": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"keelson": "on"}}}})
	for _, p := range ofKind[corev1.Pod](t, objs, "Pod") {
		g.Expect(p.Spec.Containers[0].Args).To(ContainElements("--check-admission-namespace=default", "--check-admission-label=keelson=on"))
	}
	// The test's Role is bound to dry runs: a ValidatingAdmissionPolicy refuses any other write of its account.
	var dryRunOnly *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range ofKind[admissionregistrationv1.ValidatingAdmissionPolicy](t, mustRender(t, nil), "ValidatingAdmissionPolicy") {
		if strings.HasSuffix(p.Name, "-tests-dry-run-only") {
			dryRunOnly = p
		}
	}
	g.Expect(dryRunOnly).NotTo(BeNil())
	g.Expect(dryRunOnly.Spec.Validations[0].Expression).To(Equal("request.dryRun == true"))
	g.Expect(dryRunOnly.Spec.MatchConditions[0].Expression).To(ContainSubstring("system:serviceaccount:" + namespace + ":keelson-"))
}

// The container-stub webhook sees only updates of Deployments and StatefulSets whose template holds a container
// without an image (which the apiserver refuses anyway), whatever object selector the values give, and never blocks
// one (nor holds it long).
func TestContainerStubWebhookSeesOnlyStubs(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"webhooks": map[string]any{"failurePolicy": "Fail", "timeoutSeconds": 10,
		"objectSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}}})
	var stubs []admissionregistrationv1.MutatingWebhook
	for _, w := range ofKind[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration") {
		for _, h := range w.Webhooks {
			if slices.Contains(h.Rules[0].Resources, "deployments") {
				g.Expect(w.Name).To(Equal("keelson-workload-sizer"))
				stubs = append(stubs, h)
			}
		}
	}
	g.Expect(stubs).To(HaveLen(1))
	h := stubs[0]
	g.Expect(h.Rules[0].Resources).To(ConsistOf("deployments", "statefulsets"))
	g.Expect(h.Rules[0].Operations).To(ConsistOf(admissionregistrationv1.Update))
	g.Expect(*h.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	g.Expect(*h.TimeoutSeconds).To(BeNumerically("<=", 3))
	g.Expect(h.ObjectSelector).To(BeNil(), "a user's workload carries none of the values' labels")
	var exprs []string
	for _, c := range h.MatchConditions {
		exprs = append(exprs, c.Expression)
	}
	g.Expect(exprs).To(ContainElement(`object.spec.template.spec.containers.exists(c, !has(c.image) || c.image == "")`))
	g.Expect(exprs).To(ContainElement(ContainSubstring("system:serviceaccount:" + namespace + ":keelson-workload-sizer")))
}

// NOTES.txt names only the enabled kinds and says how to wait for the controllers.
func TestNotesNameOnlyEnabledKinds(t *testing.T) {
	g := NewWithT(t)
	chrt, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "keelson", namespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	rel, err := install.Run(chrt, map[string]any{"pipelineController": map[string]any{"enabled": false}})
	g.Expect(err).NotTo(HaveOccurred())
	notes := rel.Info.Notes
	g.Expect(notes).To(ContainSubstring("kubectl -n keelson-system wait deployment -l app.kubernetes.io/instance=keelson --for=condition=Available"))
	g.Expect(notes).To(ContainSubstring("kubectl get daemonsets.daemonset.keelson.dev,workloadsizers.sizer.keelson.dev -A"))
	g.Expect(notes).NotTo(ContainSubstring("pipeline"))
}

// Pods land only on Linux nodes of the images' architectures, unless the user's affinity says where; a user's
// node affinity leaves the chart's spread in place. The helm test pod is not selected by the controller's Service.
func TestAffinityAndTestPod(t *testing.T) {
	g := NewWithT(t)
	archOf := func(d *appsv1.Deployment) []string {
		a := d.Spec.Template.Spec.Affinity
		g.Expect(a.NodeAffinity).NotTo(BeNil())
		for _, e := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions {
			if e.Key == "kubernetes.io/arch" {
				return e.Values
			}
		}
		return nil
	}
	objs := mustRender(t, map[string]any{"pipelineController": map[string]any{"nodeArchitectures": []any{"amd64"}}})
	g.Expect(archOf(deployment(t, objs, "daemonset-controller"))).To(ConsistOf("amd64", "arm64"))
	g.Expect(archOf(deployment(t, objs, "pipeline-controller"))).To(ConsistOf("amd64"))
	g.Expect(deployment(t, objs, "daemonset-controller").Spec.Template.Spec.Affinity.PodAntiAffinity).NotTo(BeNil())

	own := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": "pool", "operator": "In", "values": []any{"system"}}}}}}}}
	d := deployment(t, mustRender(t, map[string]any{"workloadSizer": map[string]any{"affinity": own}}), "workload-sizer")
	terms := d.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	g.Expect(terms).To(HaveLen(1))
	g.Expect(terms[0].MatchExpressions[0].Key).To(Equal("pool"), "the user's node affinity is used as given")
	g.Expect(d.Spec.Template.Spec.Affinity.PodAntiAffinity).NotTo(BeNil(), "the spread stays")

	for _, p := range ofKind[corev1.Pod](t, objs, "Pod") {
		for _, svc := range ofKind[corev1.Service](t, objs, "Service") {
			selected := true
			for k, v := range svc.Spec.Selector {
				selected = selected && p.Labels[k] == v
			}
			g.Expect(selected).To(BeFalse(), "Service %s selects the test pod %s", svc.Name, p.Name)
		}
		g.Expect(p.Spec.Affinity.NodeAffinity).NotTo(BeNil(), "the test pod runs the controller's image: same architectures")
	}
}

// Values that would break what the chart wires together are refused, each naming the value to change.
func TestRefusalsOfValuesThatBreakTheWiring(t *testing.T) {
	g := NewWithT(t)
	for what, tc := range map[string]struct {
		vals map[string]any
		want string
	}{
		"a flag the chart sets": {map[string]any{"workloadSizer": map[string]any{"extraArgs": []any{"--webhook-port=9443"}}},
			"workloadSizer.extraArgs: --webhook-port is set by the chart"},
		"one digest for three images": {map[string]any{"global": map[string]any{"image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)}}},
			"global.image.digest would pin all three images to one digest"},
		"one ServiceAccount for three": {map[string]any{"global": map[string]any{"serviceAccount": map[string]any{"name": "shared"}}},
			"global.serviceAccount.name would give all three controllers one ServiceAccount"},
	} {
		_, err := render(tc.vals)
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), what)
	}
	// A release name of 40 characters with a nameOverride of 10: 40+1+10+1+19 = 71 for the pipeline controller.
	chrt, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = strings.Repeat("r", 40), namespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	_, err = install.Run(chrt, map[string]any{"nameOverride": "edge-inner"})
	g.Expect(err).To(MatchError(ContainSubstring("-edge-inner-daemonset-controller is 72 characters, over Kubernetes' 63")))
	g.Expect(render(map[string]any{"enabled": true})).Error().NotTo(HaveOccurred(), "a parent chart's condition key is accepted")
}

// The packaged chart carries its README (helm show readme, Artifact Hub), and the README is the generated one.
func TestPackagedChartCarriesItsReadme(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range chrt.Files {
		if f.Name == "README.md" {
			if !strings.Contains(string(f.Data), "| global.nodeArchitectures |") {
				t.Errorf("README.md does not list the values: run make chart-docs")
			}
			return
		}
	}
	t.Errorf("README.md is not in the packaged chart (check .helmignore)")
}

// What global holds is written once in the schema ($defs.controllerSettings): global and each controller block
// refer to it, and each controller block, closed, names every one of its settings (as true: the $ref checks them),
// so a setting added to global is a controller override too.
func TestSchemaWritesTheSettingsOnce(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema struct {
		Defs struct {
			Settings struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"controllerSettings"`
		} `json:"$defs"`
		Properties map[string]struct {
			Ref                  string                     `json:"$ref"`
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		} `json:"properties"`
	}
	g.Expect(json.Unmarshal(raw, &schema)).To(Succeed())
	g.Expect(schema.Defs.Settings.Properties).To(HaveKey("image"))
	g.Expect(schema.Properties["global"].Ref).To(Equal("#/$defs/controllerSettings"))
	for _, c := range []string{"daemonsetController", "workloadSizer", "pipelineController"} {
		b := schema.Properties[c]
		g.Expect(b.Ref).To(Equal("#/$defs/controllerSettings"), c)
		g.Expect(b.AdditionalProperties).To(HaveValue(BeFalse()), c)
		for k := range schema.Defs.Settings.Properties {
			g.Expect(string(b.Properties[k])).To(Equal("true"), "%s does not name the setting %s", c, k)
		}
	}
	// A controller override is checked as global is.
	_, err = render(map[string]any{"workloadSizer": map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}})
	g.Expect(err).To(MatchError(ContainSubstring("at '/workloadSizer/image/pullPolicy': value must be one of")))
}

// The packaged chart carries the license its Artifact Hub annotation claims, the repository's own.
func TestPackagedChartCarriesItsLicense(t *testing.T) {
	g := NewWithT(t)
	chrt, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chrt.Metadata.Annotations).To(HaveKeyWithValue("artifacthub.io/license", "Apache-2.0"))
	root, err := os.ReadFile("../LICENSE")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(root)).To(ContainSubstring("Apache License\n                           Version 2.0"))
	var packaged []byte
	for _, f := range chrt.Files {
		if f.Name == "LICENSE" {
			packaged = f.Data
		}
	}
	g.Expect(string(packaged)).To(Equal(string(root)), "the chart's LICENSE is the repository's")
}
