//go:build integration

package manager_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/keelson-dev/keelson/internal/testenv"
)

// kindOf is what each binary reconciles: the make dev sample of its kind (created in the test's namespace), the
// path of its validating webhook, and its status subresource as keelson_apiserver_writes_total names it.
var kindOf = map[string]struct{ sample, webhook, statusWrite string }{
	"daemonset-controller": {"docs/samples/dev/daemonset.yaml", "/validate-daemonset-keelson-dev-v1alpha1-daemonset",
		`group="daemonset.keelson.dev",resource="daemonsets/status",verb="patch"`},
	"workload-sizer": {"docs/samples/dev/workloadsizer.yaml", "/validate-sizer-keelson-dev-v1alpha1-workloadsizer",
		`group="sizer.keelson.dev",resource="workloadsizers/status",verb="patch"`},
	"pipeline-controller": {"docs/samples/dev/pipeline.yaml", "/validate-inference-keelson-dev-v1alpha1-pipeline",
		`group="inference.keelson.dev",resource="pipelines/status",verb="patch"`},
}

// Each binary, started against a real apiserver with one object of its kind, exports every metric the operations
// guide lists for it, over TLS verified against the webhook certificate (--metrics-webhook-cert). The guide's
// tables are the list: a metric added to them and not exported, or renamed in the code, fails here.
func TestEveryDocumentedMetricIsExported(t *testing.T) {
	documented, err := testenv.DocumentedMetrics(env.Root)
	if err != nil {
		t.Fatal(err)
	}
	reader := serviceAccountToken(t, "metrics-doc-reader", true)
	for _, b := range binaries {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			ns := createSample(t, kindOf[b].sample)
			certDir := t.TempDir()
			writeSelfSignedCert(t, certDir)
			metricsAddr, webhookPort := freeAddr(t), strings.Split(freeAddr(t), ":")[1]
			p := start(t, b, "--metrics-bind-address="+metricsAddr, "--metrics-webhook-cert",
				"--leader-election-id=metrics-doc-"+b+"-"+ns, "--webhook-cert-dir="+certDir, "--webhook-port="+webhookPort)
			g.Eventually(p.leads, 30*time.Second, 50*time.Millisecond).Should(BeTrue())

			// The scraper trusts only the webhook certificate, as the chart's ServiceMonitor trusts only the webhook CA.
			roots := x509.NewCertPool()
			pem, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(roots.AppendCertsFromPEM(pem)).To(BeTrue())
			httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}

			// One admission request, so the webhook metrics have a series.
			g.Eventually(func() error {
				resp, err := httpClient.Post("https://127.0.0.1:"+webhookPort+kindOf[b].webhook, "application/json", nil)
				if err != nil {
					return err
				}
				return resp.Body.Close()
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

			var missing []string
			var lines []string
			g.Eventually(func() []string {
				lines, err = scrapeMetrics(httpClient, metricsAddr, reader)
				if err != nil {
					return []string{err.Error()}
				}
				missing = nil
				for _, m := range documented {
					// A per-object metric has series only for objects at fault, which a healthy sample is not: the
					// collectors' own tests cover those.
					if m.ExportedBy(b) && !m.PerObject && !exports(lines, m.SeriesNames()) {
						missing = append(missing, m.Name)
					}
				}
				return missing
			}, 60*time.Second, 250*time.Millisecond).Should(BeEmpty(), "documented metrics %s does not export", b)

			// The writes are counted by verb and resource: here the status writes of the kind's object.
			g.Expect(exports(lines, []string{"keelson_apiserver_writes_total{" + kindOf[b].statusWrite + "}"})).
				To(BeTrue(), "no status write of the sample counted")
			// Nothing exported under keelson_ is missing from the guide.
			for _, l := range lines {
				name := seriesName(l)
				if !strings.HasPrefix(name, "keelson_") {
					continue
				}
				found := false
				for _, m := range documented {
					for _, s := range m.SeriesNames() {
						found = found || s == name
					}
				}
				g.Expect(found).To(BeTrue(), "%s exports %s, which docs/operations.md does not list", b, name)
			}
		})
	}
}

// createSample creates the sample object in a namespace of its own and returns the namespace.
func createSample(t *testing.T, path string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := fmt.Sprintf("metrics-%d", rand.IntN(1<<30))
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	f, err := os.Open(filepath.Join(env.Root, path))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	u := &unstructured.Unstructured{}
	g.Expect(utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&u.Object)).To(Succeed())
	u.SetNamespace(ns)
	g.Expect(env.Client.Create(ctx, u)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), u)
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return ns
}

// scrapeMetrics GETs /metrics with token and returns its sample lines.
func scrapeMetrics(c *http.Client, addr, token string) ([]string, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("scrape answered %s: %s", resp.Status, body)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// seriesName is the metric name of a sample line.
func seriesName(line string) string {
	return strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
}

// exports reports whether a sample line starts with one of the prefixes followed by labels or a value: a name, or
// a name with its first labels.
func exports(lines, prefixes []string) bool {
	for _, l := range lines {
		for _, p := range prefixes {
			if strings.HasSuffix(p, "}") {
				// A name with labels: the sample's labels may hold more, in order.
				if strings.HasPrefix(l, strings.TrimSuffix(p, "}")) {
					return true
				}
				continue
			}
			if seriesName(l) == p {
				return true
			}
		}
	}
	return false
}
