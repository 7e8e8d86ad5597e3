//go:build integration

package charts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// The monitoring tests that start processes: the pinned promtool on the rendered rules and dashboard queries, and an apiserver that takes the monitoring objects.

// promtool is the pinned promtool that make test installs.
func promtool(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := testenv.PinnedVersion(root, "PROMETHEUS_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "promtool-"+version)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run make test or make rules-test (they install the pinned promtool)", p)
	}
	return p
}

// The alerts as the chart renders them pass promtool's checks, and its unit tests (charts/testdata/alerts_test.yaml)
// make each alert fire where it should and stay silent where it should not. Each names only documented metrics and
// has its runbook in docs/operations.md, where its runbook_url points.
func TestAlertingRules(t *testing.T) {
	g := NewWithT(t)
	pr := renderedRules(t, monitoring(nil))
	dir := t.TempDir()
	body, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), body, 0o600)).To(Succeed())
	fixtures, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	// Runbooks are those of the release the chart installs, not of a branch that moves on.
	chrt, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	fixtures = bytes.ReplaceAll(fixtures, []byte("RUNBOOKS"),
		[]byte("https://github.com/keelson-dev/keelson/blob/v"+chrt.Metadata.AppVersion+"/docs/operations.md"))
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), fixtures, 0o600)).To(Succeed())

	out, err := runCmd(promtool(t), "check", "rules", filepath.Join(dir, "rules.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), "promtool check rules:\n%s", out)
	out, err = runCmd(promtool(t), "test", "rules", filepath.Join(dir, "alerts_test.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), "promtool test rules:\n%s", out)
	t.Logf("promtool test rules:\n%s", out)

	doc, err := os.ReadFile("../docs/operations.md")
	g.Expect(err).NotTo(HaveOccurred())
	known := documentedSeries(t)
	tested := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+alertname: (\w+)$`).FindAllSubmatch(fixtures, -1) {
		tested[string(m[1])] = true
	}
	for _, r := range pr.Spec.Groups[0].Rules {
		g.Expect(string(doc)).To(ContainSubstring("\n### "+r.Alert+"\n"), "no runbook for %s in docs/operations.md", r.Alert)
		g.Expect(r.Annotations["runbook_url"]).To(HaveSuffix("docs/operations.md#" + strings.ToLower(r.Alert)))
		g.Expect(r.Labels).To(HaveKey("severity"))
		g.Expect(tested).To(HaveKey(r.Alert), "alerts_test.yaml never tests %s", r.Alert)
		for _, name := range metricNames(r.Expr.String()) {
			g.Expect(known).To(HaveKey(name), "%s names %s, which docs/operations.md does not list", r.Alert, name)
		}
	}
}

// dashboard is what the tests read of the Grafana dashboard's JSON.
type dashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// The dashboard's ConfigMap carries the sidecar's label, and every query of the dashboard names only documented
// metrics and parses (promtool checks each as a recording rule).
func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, monitoring(map[string]any{"dashboard": map[string]any{
		"namespace": "grafana", "sidecarLabel": "grafana_dashboard_keelson", "sidecarLabelValue": "yes",
		"annotations": map[string]any{"grafana_folder": "Keelson"}}}))
	cms := ofKind[corev1.ConfigMap](t, objs, "ConfigMap")
	g.Expect(cms).To(HaveLen(1))
	cm := cms[0]
	g.Expect(cm.Namespace).To(Equal("grafana"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard_keelson", "yes"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("grafana_folder", "Keelson"))

	var dash dashboard
	g.Expect(json.Unmarshal([]byte(cm.Data["keelson.json"]), &dash)).To(Succeed())
	g.Expect(dash.UID).To(Equal("keelson-keelson-keelson-system"), "the release's uid")
	var vars []string
	for _, v := range dash.Templating.List {
		vars = append(vars, v.Name)
	}
	g.Expect(vars).To(Equal([]string{"datasource", "cluster", "namespace", "job"}))
	// "All" controllers are the release's jobs, as keelson_build_info lists them, not any job of a namespace that
	// other operators share (an allValue of ".+" would be).
	g.Expect(cm.Data["keelson.json"]).NotTo(ContainSubstring(`"allValue"`))
	// The runbooks link is the release's, as the alerts' runbook_url.
	chrt, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cm.Data["keelson.json"]).To(ContainSubstring(`"url": "https://github.com/keelson-dev/keelson/blob/v` +
		chrt.Metadata.AppVersion + `/docs/operations.md"`))

	known := documentedSeries(t)
	var rules []map[string]string
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		g.Expect(p.Datasource.UID).To(Equal("${datasource}"), "panel %q ignores the data source variable", p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		for i, q := range p.Targets {
			if strings.Contains(q.Expr, "apiserver_admission_") {
				// The apiserver's series name the webhook, not the release: picked by cluster and webhook name.
				g.Expect(q.Expr).To(ContainSubstring(`cluster="$cluster", name=~".+\\.keelson\\.dev"`), "panel %q ignores the variables", p.Title)
			} else {
				g.Expect(q.Expr).To(ContainSubstring(`cluster="$cluster", namespace="$namespace", job=~"$job"`), "panel %q ignores the variables", p.Title)
			}
			names := metricNames(q.Expr)
			g.Expect(names).NotTo(BeEmpty(), "panel %q query %d names no metric", p.Title, i)
			// A follower's work queue fills from its warmed-up informers and never drains: only the leader's counts.
			if strings.Contains(q.Expr, "workqueue_") {
				g.Expect(q.Expr).To(ContainSubstring(`and on (namespace, job, pod) (leader_election_master_status{cluster="$cluster", namespace="$namespace", job=~"$job"} == 1)`),
					"panel %q shows the followers' queues", p.Title)
			}
			for _, n := range names {
				g.Expect(known).To(HaveKey(n), "panel %q names %s, which docs/operations.md does not list", p.Title, n)
				used[n] = true
			}
			rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:panel%d:query%d", len(rules), i),
				"expr": grafanaVariables.Replace(q.Expr)})
		}
	}
	// Every Keelson metric is on the dashboard somewhere.
	for _, m := range documented(t) {
		shown := false
		for _, s := range m.SeriesNames() {
			shown = shown || used[s]
		}
		if strings.HasPrefix(m.Name, "keelson_") && !shown {
			t.Errorf("no panel shows %s", m.Name)
		}
	}
	body, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	g.Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(t.TempDir(), "dashboard.yaml")
	g.Expect(os.WriteFile(file, body, 0o600)).To(Succeed())
	out, err := runCmd(promtool(t), "check", "rules", file)
	g.Expect(err).NotTo(HaveOccurred(), "promtool check rules on the dashboard's queries:\n%s", out)
}

// On a cluster without the Prometheus Operator, asking for its rules says which CRD is missing. With its CRDs (the
// pinned release's, tools/install.sh monitoring-crds), the chart installs with every monitoring object, and a real
// apiserver accepts each of them server-side against the CRDs' schemas: a misspelt field of a ServiceMonitor fails
// here, not in a user's cluster.
func TestMonitoringAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{}) })
	g.Expect(envErr).NotTo(HaveOccurred())
	ctx := context.Background()
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())

	g.Expect(installAgainstCluster(t, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true},
		"serviceMonitor": map[string]any{"enabled": true}}})).
		To(MatchError(ContainSubstring("metrics.serviceMonitor.enabled needs the ServiceMonitor CRD")))
	g.Expect(installAgainstCluster(t, map[string]any{"metrics": map[string]any{"dashboard": map[string]any{"enabled": true}}})).
		To(Succeed(), "the dashboard needs no CRD")

	installMonitoringCRDs(t)
	g.Expect(installAgainstCluster(t, monitoring(nil))).To(Succeed())
	for _, mode := range []string{"selfSigned", "certManager"} {
		vals := monitoring(map[string]any{"serviceMonitor": map[string]any{
			"relabelings":       []any{map[string]any{"action": "labeldrop", "regex": "container"}},
			"metricRelabelings": []any{map[string]any{"action": "drop", "sourceLabels": []any{"__name__"}, "regex": "go_gc_.*"}}}})
		vals["webhooks"] = map[string]any{"certs": map[string]any{"mode": mode}}
		kinds := map[string]int{}
		for _, u := range mustRender(t, vals) {
			if u.GetLabels()["app.kubernetes.io/component"] != "monitoring" && !strings.HasPrefix(u.GetAPIVersion(), "monitoring.coreos.com/") {
				continue
			}
			err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("chart-test"),
				client.ForceOwnership, client.DryRunAll)
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s", mode, u.GetKind(), u.GetName())
			kinds[u.GetKind()]++
		}
		g.Expect(kinds).To(Equal(map[string]int{"ServiceMonitor": 3, "PrometheusRule": 1, "ConfigMap": 1, "ServiceAccount": 1,
			"Secret": 1, "ClusterRole": 1, "ClusterRoleBinding": 1}), mode)
	}
}

// installMonitoringCRDs installs the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs into the test
// apiserver until the test ends (the other tests expect a cluster without them).
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	version, err := testenv.PinnedVersion(root, "PROMETHEUS_OPERATOR_VERSION")
	g.Expect(err).NotTo(HaveOccurred())
	files, _ := filepath.Glob(filepath.Join(root, "bin", "monitoring-crds-"+version, "*.yaml"))
	if len(files) != 2 {
		t.Fatalf("bin/monitoring-crds-%s/ holds %d CRDs: run make test (it runs tools/install.sh monitoring-crds)", version, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(b, &crd.Object)).To(Succeed())
		g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), crd)
			g.Eventually(func() bool {
				return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd))
			}, "30s", "100ms").Should(BeTrue(), "CRD %s not gone", crd.GetName())
		})
		g.Eventually(func() bool {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true
				}
			}
			return false
		}, "30s", "100ms").Should(BeTrue(), "CRD %s not established", crd.GetName())
	}
}
