package charts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// monitoring returns values that switch the monitoring objects on, merged with extra's metrics sections.
func monitoring(extra map[string]any) map[string]any {
	m := map[string]any{
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
		"dashboard":      map[string]any{"enabled": true},
	}
	for k, v := range extra {
		for kk, vv := range v.(map[string]any) {
			m[k].(map[string]any)[kk] = vv
		}
	}
	return map[string]any{"metrics": m}
}

// strict decodes a rendered object into T, refusing any field T does not have: a misspelt field of a
// Prometheus Operator object (which no apiserver here validates) fails the test instead of being ignored.
func strict[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out T
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &out
}

// named returns the rendered objects of kind, by name.
func named(objs []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if u.GetKind() == kind {
			out[u.GetName()] = u
		}
	}
	return out
}

func TestMonitoringIsOptIn(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, nil)
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		g.Expect(named(objs, kind)).To(BeEmpty(), "%s rendered by default", kind)
	}
	g.Expect(named(objs, "ServiceAccount")).NotTo(HaveKey("keelson-metrics-reader"))
	// The controllers serve metrics with their webhook certificate in every mode, so a ServiceMonitor added later
	// (or a scraper of the user's own) can verify it.
	for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-webhook-cert"), d.Name)
	}
}

// Each controller's ServiceMonitor scrapes over TLS verified against the CA of the webhook certificate it serves,
// for the Service's name, with a token of a reader allowed only to get /metrics: no skipped verification, no
// deprecated token file.
func TestServiceMonitorsScrapeOverVerifiedTLS(t *testing.T) {
	for _, mode := range []string{"selfSigned", "certManager"} {
		t.Run(mode, func(t *testing.T) {
			g := NewWithT(t)
			vals := monitoring(map[string]any{"serviceMonitor": map[string]any{
				"scrapeTimeout": "15s", "labels": map[string]any{"release": "kube-prometheus-stack"},
				"relabelings": []any{map[string]any{"action": "labeldrop", "regex": "container"}}}})
			vals["webhooks"] = map[string]any{"certs": map[string]any{"mode": mode}}
			objs := mustRender(t, vals)
			monitors := named(objs, "ServiceMonitor")
			g.Expect(monitors).To(HaveLen(len(controllers)))
			certificates := named(objs, "Certificate")
			for _, d := range ofKind[appsv1.Deployment](t, objs, "Deployment") {
				args := d.Spec.Template.Spec.Containers[0].Args
				g.Expect(args).To(ContainElements("--metrics-webhook-cert", "--webhook-service-name="+d.Name))
				sm := strict[monitoringv1.ServiceMonitor](t, monitors[d.Name])
				g.Expect(sm.Namespace).To(Equal(namespace))
				g.Expect(sm.Labels).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
				g.Expect(sm.Spec.Selector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels), "selects the controller's Service")
				// The alerts and the dashboard read the classic _bucket series, which a Prometheus that scrapes native
				// histograms would otherwise not ingest.
				g.Expect(sm.Spec.ScrapeClassicHistograms).To(HaveValue(BeTrue()))
				g.Expect(sm.Spec.Endpoints).To(HaveLen(1))
				ep := sm.Spec.Endpoints[0]
				g.Expect(ep.Port).To(Equal("metrics"))
				g.Expect(string(*ep.Scheme)).To(Equal("https"))
				g.Expect(string(ep.ScrapeTimeout)).To(Equal("15s"))
				g.Expect(string(ep.Interval)).To(Equal("30s"))
				g.Expect(ep.BearerTokenFile).To(BeEmpty(), "the deprecated token file") //nolint:staticcheck // checks it is unused
				g.Expect(ep.Authorization.Credentials.Name).To(Equal("keelson-metrics-reader"))
				g.Expect(ep.Authorization.Credentials.Key).To(Equal("token"))
				tlsCfg := ep.TLSConfig
				g.Expect(tlsCfg.InsecureSkipVerify).To(BeNil(), "verification skipped")
				// The name the webhook certificate is issued for: the own CA's first DNS name, cert-manager's dnsNames.
				g.Expect(*tlsCfg.ServerName).To(Equal(d.Name + "." + namespace + ".svc"))
				secret := d.Name + "-webhook-tls"
				if mode == "certManager" {
					secret = d.Name + "-webhook-cert-manager"
					cert := certificates[d.Name]
					g.Expect(cert.Object["spec"].(map[string]any)["secretName"]).To(Equal(secret))
					g.Expect(cert.Object["spec"].(map[string]any)["dnsNames"]).To(ContainElement(*tlsCfg.ServerName))
				}
				g.Expect(tlsCfg.CA.Secret.Name).To(Equal(secret))
				g.Expect(tlsCfg.CA.Secret.Key).To(Equal("ca.crt"))
				g.Expect(ep.RelabelConfigs).To(HaveLen(1))
				g.Expect(ep.RelabelConfigs[0].Action).To(Equal("labeldrop"))
			}
			checkMetricsReader(g, t, objs, namespace)
		})
	}
}

// checkMetricsReader checks the scrapers' identity: a ServiceAccount in ns with a token Secret, bound to a
// ClusterRole that allows get on /metrics and nothing else.
func checkMetricsReader(g Gomega, t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	const reader = "keelson-metrics-reader"
	sa := named(objs, "ServiceAccount")[reader]
	g.Expect(sa).NotTo(BeNil(), "the reader's ServiceAccount")
	g.Expect(sa.GetNamespace()).To(Equal(ns))
	secret := ofKind[corev1.Secret](t, []*unstructured.Unstructured{named(objs, "Secret")[reader]}, "Secret")[0]
	g.Expect(secret.Namespace).To(Equal(ns))
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
	g.Expect(secret.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, reader))
	var role *rbacv1.ClusterRole
	for _, r := range ofKind[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		if r.Name == reader {
			role = r
		}
	}
	g.Expect(role).NotTo(BeNil())
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}))
	var binding *rbacv1.ClusterRoleBinding
	for _, b := range ofKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		if b.Name == reader {
			binding = b
		}
	}
	g.Expect(binding).NotTo(BeNil())
	g.Expect(binding.RoleRef.Name).To(Equal(reader))
	g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: reader, Namespace: ns}}))
}

func TestServiceMonitorNamespaceAndOwnToken(t *testing.T) {
	g := NewWithT(t)
	elsewhere := map[string]any{"namespace": "monitoring"}
	_, err := render(monitoring(map[string]any{"serviceMonitor": elsewhere}))
	g.Expect(err).To(MatchError(ContainSubstring("set metrics.serviceMonitor.tlsConfig")),
		"a CA Secret in another namespace cannot be referred to")

	tlsConfig := map[string]any{"ca": map[string]any{"configMap": map[string]any{"name": "keelson-ca", "key": "ca.crt"}},
		"serverName": "keelson-daemonset-controller.keelson-system.svc"}
	elsewhere["tlsConfig"] = tlsConfig
	objs := mustRender(t, monitoring(map[string]any{"serviceMonitor": elsewhere}))
	for _, u := range named(objs, "ServiceMonitor") {
		sm := strict[monitoringv1.ServiceMonitor](t, u)
		g.Expect(sm.Namespace).To(Equal("monitoring"))
		g.Expect(sm.Spec.NamespaceSelector.MatchNames).To(Equal([]string{namespace}))
		g.Expect(sm.Spec.Endpoints[0].TLSConfig.CA.ConfigMap.Name).To(Equal("keelson-ca"))
	}
	checkMetricsReader(g, t, objs, "monitoring")

	own := mustRender(t, monitoring(map[string]any{"serviceMonitor": map[string]any{
		"authorization": map[string]any{"existingSecret": "prometheus-token", "key": "jwt"}}}))
	g.Expect(named(own, "ServiceAccount")).NotTo(HaveKey("keelson-metrics-reader"))
	g.Expect(named(own, "ClusterRole")).NotTo(HaveKey("keelson-metrics-reader"))
	for _, u := range named(own, "ServiceMonitor") {
		c := strict[monitoringv1.ServiceMonitor](t, u).Spec.Endpoints[0].Authorization.Credentials
		g.Expect(c.Name).To(Equal("prometheus-token"))
		g.Expect(c.Key).To(Equal("jwt"))
	}
}

// A flag the monitoring depends on cannot be turned off from extraArgs.
func TestMetricsCertificateFlagIsTheCharts(t *testing.T) {
	_, err := render(map[string]any{"daemonsetController": map[string]any{"extraArgs": []any{"--metrics-webhook-cert=false"}}})
	if err == nil || !strings.Contains(err.Error(), "--metrics-webhook-cert is set by the chart") {
		t.Fatalf("got %v, want the chart's refusal", err)
	}
}

// documented is every metric the operations guide lists.
func documented(t *testing.T) []testenv.DocumentedMetric {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := testenv.DocumentedMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	return metrics
}

// documentedSeries is every series name the operations guide lists (a histogram's _bucket, _sum and _count).
func documentedSeries(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range documented(t) {
		for _, s := range m.SeriesNames() {
			out[s] = true
		}
	}
	return out
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlWords    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true,
		"without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames lists the metric names a PromQL expression selects: what is left once strings, label matchers,
// ranges and grouping clauses are cut out, that is neither a function (followed by a parenthesis), a keyword nor a
// part of a number or duration.
func metricNames(expr string) []string {
	e := promqlStrings.ReplaceAllString(expr, `""`)
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRanges.ReplaceAllString(e, " ")
	e = promqlGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promqlWords.FindAllStringIndex(e, -1) {
		w := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "0123456789.") {
			continue // 1e3, 5m
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || promqlKeywords[strings.ToLower(w)] {
			continue
		}
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (namespace, job) (up{job="a", x=~"b|c"}) == 0 or absent(up{job="a"})`:                            {"up", "up"},
		`histogram_quantile(0.99, sum by (le) (rate(workqueue_queue_duration_seconds_bucket{a="b"}[5m]))) > 1e3`: {"workqueue_queue_duration_seconds_bucket"},
		`(sum(x_total offset 5m) > 0) unless on (job) (max by (job) (y{a="}"}) == 1)`:                            {"x_total", "y"},
		`min(keelson_a{j="$job"} - time()) / 86400 < 7 * 86400`:                                                  {"keelson_a"},
	} {
		if got := metricNames(expr); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", expr, got, want)
		}
	}
}

// renderedRules renders the chart's PrometheusRule for vals and returns it.
func renderedRules(t *testing.T, vals map[string]any) *monitoringv1.PrometheusRule {
	t.Helper()
	rules := named(mustRender(t, vals), "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	for _, u := range rules {
		return strict[monitoringv1.PrometheusRule](t, u)
	}
	return nil
}

func TestAlertingRulesFollowTheirValues(t *testing.T) {
	g := NewWithT(t)
	vals := monitoring(map[string]any{"prometheusRule": map[string]any{
		"namespace": "monitoring", "labels": map[string]any{"release": "prom"},
		"disabled":             map[string]any{"KeelsonWorkQueueBacklog": true},
		"additionalRuleLabels": map[string]any{"team": "platform", "severity": "ignored"},
		"runbookBaseURL":       "https://runbooks.example.com/keelson",
		"certificateExpiry":    map[string]any{"warningDays": 2, "criticalDays": 0.5}}})
	vals["daemonsetController"] = map[string]any{"enabled": false}
	vals["pipelineController"] = map[string]any{"enabled": false}
	pr := renderedRules(t, vals)
	g.Expect(pr.Namespace).To(Equal("monitoring"))
	g.Expect(pr.Labels).To(HaveKeyWithValue("release", "prom"))
	alerts := map[string]bool{}
	for _, r := range pr.Spec.Groups[0].Rules {
		alerts[r.Alert] = true
		g.Expect(r.Labels).To(HaveKeyWithValue("team", "platform"))
		g.Expect(r.Labels["severity"]).NotTo(Equal("ignored"), "an added label overrode the alert's own")
		g.Expect(r.Annotations["runbook_url"]).To(Equal("https://runbooks.example.com/keelson#" + strings.ToLower(r.Alert)))
		g.Expect(r.Expr.String()).NotTo(ContainSubstring("daemonset-controller"), "a disabled controller's job")
		g.Expect(r.Expr.String()).NotTo(ContainSubstring("pipeline-controller"), "a disabled controller's job")
	}
	g.Expect(alerts).To(HaveKey("KeelsonWorkloadSizerConflict"))
	// The certificate thresholds are values (short-lived certificates renew days before expiry by design).
	var expiring []string
	for _, r := range pr.Spec.Groups[0].Rules {
		if r.Alert == "KeelsonWebhookCertificateExpiring" {
			expiring = append(expiring, r.Labels["severity"]+": "+r.Expr.String()+" / "+r.Annotations["summary"])
		}
	}
	g.Expect(expiring).To(ConsistOf(
		And(HavePrefix("warning: "), ContainSubstring("< 2 * 86400"), HaveSuffix("within 2 days.")),
		And(HavePrefix("critical: "), ContainSubstring("< 0.5 * 86400"), HaveSuffix("within 0.5 days."))))
	g.Expect(alerts).NotTo(HaveKey("KeelsonWorkQueueBacklog"), "disabled")
	g.Expect(alerts).NotTo(HaveKey("KeelsonDaemonSetRolloutStuck"), "its controller is off")
	g.Expect(alerts).NotTo(HaveKey("KeelsonPipelineStepFailing"), "its controller is off")
}

// grafanaVariables are the dashboard's variables, as a query runs them: promtool sees what Prometheus would.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "2m", "$__range", "1h", "$namespace", "keelson-system",
	"$job", "keelson-daemonset-controller", "$cluster", "")

// Grafana keys dashboards by uid: two releases' dashboards get two, of at most 40 characters (Grafana's limit).
func TestDashboardUIDIsTheReleases(t *testing.T) {
	g := NewWithT(t)
	uids := map[string]string{}
	for _, rel := range [][2]string{{"keelson", "keelson-system"}, {"keelson", "team-a"}, {"edge", "keelson-system"},
		{"a-very-long-release-name-indeed", "a-very-long-namespace-name-as-well"}, {"a-very-long-release-name-indeed", "another-long-namespace-name-as-well"}} {
		objs, err := renderAs(rel[0], rel[1], monitoring(nil))
		g.Expect(err).NotTo(HaveOccurred())
		cms := ofKind[corev1.ConfigMap](t, objs, "ConfigMap")
		g.Expect(cms).To(HaveLen(1))
		var dash struct {
			UID string `json:"uid"`
		}
		g.Expect(json.Unmarshal([]byte(cms[0].Data["keelson.json"]), &dash)).To(Succeed())
		g.Expect(len(dash.UID)).To(BeNumerically("<=", 40), "%v: uid %q", rel, dash.UID)
		g.Expect(dash.UID).To(MatchRegexp(`^keelson-[a-z0-9-]+$`), "%v", rel)
		g.Expect(uids).NotTo(HaveKey(dash.UID), "%v and %s share the uid", rel, uids[dash.UID])
		uids[dash.UID] = fmt.Sprint(rel)
	}
}
