// Package metrics reads the controllers' Prometheus endpoints for the development tools (benchmarks, reliability
// suite): it scrapes every pod of a controller directly on its pod IP, with a token of its own, as a Prometheus
// would.
package metrics

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reconciles is controller-runtime's counter of finished reconciles, one series per controller and result.
const Reconciles = "controller_runtime_reconcile_total"

// Process gauges every controller exposes: its resident memory and its goroutines.
const (
	ResidentMemory = "process_resident_memory_bytes"
	Goroutines     = "go_goroutines"
)

// readerName is the tools' own identity for scraping: a service account allowed to get /metrics. Its RBAC is
// cluster-scoped: DeleteReader removes it.
const readerName = "keelson-tools-metrics"

// port is the controllers' metrics port (the chart's).
const port = "8443"

// Scraper reads the /metrics endpoints of one release's controllers on their pod IPs (the controllers run on the
// local cluster's real node, whose pod network the host reaches).
type Scraper struct {
	c         client.Client
	releaseNS string
	release   string
	token     string
	http      *http.Client
}

// NewScraper grants a service account in ns the right to read metrics and asks the apiserver for its token.
func NewScraper(ctx context.Context, c client.Client, ns, releaseNS, release string) (*Scraper, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: readerName, Namespace: ns}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: readerName},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: readerName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: readerName, Namespace: ns}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			return nil, err
		}
	}
	// The binding names the service account of the namespace it was first made for: point it at this one.
	if err := c.Get(ctx, client.ObjectKeyFromObject(binding), binding); err != nil {
		return nil, err
	}
	if s := binding.Subjects; len(s) != 1 || s[0].Namespace != ns {
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: readerName, Namespace: ns}}
		if err := c.Update(ctx, binding); err != nil {
			return nil, err
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3 * 3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("a token for %s: %w", readerName, err)
	}
	return &Scraper{c: c, releaseNS: releaseNS, release: release, token: tr.Status.Token,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The metrics certificate is issued for the controllers' Service names, not the pod IPs dialled here;
			// the token guards access.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		}}}, nil
}

// DeleteReader removes the cluster-scoped RBAC that NewScraper made.
func DeleteReader(ctx context.Context, c client.Client) error {
	for _, o := range []client.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: readerName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: readerName}}} {
		if err := client.IgnoreNotFound(c.Delete(ctx, o)); err != nil {
			return err
		}
	}
	return nil
}

// PodText is one running pod's metrics exposition.
type PodText struct {
	Pod  corev1.Pod
	Text string
}

// Scrape returns the metrics of every running pod of the binary (a controller's Deployment, named after the
// binary). No running pod is an error: nothing scraped must not read as a perfectly idle controller.
func (s *Scraper) Scrape(ctx context.Context, binary string) ([]PodText, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(s.releaseNS), client.MatchingLabels{
		"app.kubernetes.io/name": binary, "app.kubernetes.io/instance": s.release}); err != nil {
		return nil, err
	}
	var out []PodText
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		text, err := s.get(ctx, "https://"+net.JoinHostPort(p.Status.PodIP, port)+"/metrics")
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", p.Name, err)
		}
		out = append(out, PodText{Pod: p, Text: text})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running %s pod in %s to read metrics from", binary, s.releaseNS)
	}
	return out, nil
}

// ReconcileTotal returns the reconciles every running pod of the binary has finished, summed over its pods (only
// the leader reconciles) and its controllers.
func (s *Scraper) ReconcileTotal(ctx context.Context, binary string) (float64, error) {
	texts, err := s.Scrape(ctx, binary)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, t := range texts {
		for _, v := range SumCounter(t.Text, Reconciles) {
			total += v
		}
	}
	return total, nil
}

// ReconcileTotals reads the reconcile counter of each binary (ReconcileTotal).
func (s *Scraper) ReconcileTotals(ctx context.Context, binaries []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, b := range binaries {
		v, err := s.ReconcileTotal(ctx, b)
		if err != nil {
			return nil, err
		}
		out[b] = v
	}
	return out, nil
}

// PerSecond is each counter's growth from before to after, over d.
func PerSecond(before, after map[string]float64, d time.Duration) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		out[name] = (v - before[name]) / d.Seconds()
	}
	return out
}

// Window is a stretch of time in which nothing was changed, and what the controllers did in it.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// ReconcilesPerSecond is, per binary, the reconciles its controllers finished in the window over its length.
	ReconcilesPerSecond map[string]float64 `json:"reconcilesPerSecond"`
}

// Idle sits still for d and reports what the binaries' controllers reconciled meanwhile.
func (s *Scraper) Idle(ctx context.Context, binaries []string, d time.Duration) (Window, error) {
	before, err := s.ReconcileTotals(ctx, binaries)
	if err != nil {
		return Window{}, err
	}
	w := Window{From: time.Now()}
	select {
	case <-ctx.Done():
		return w, ctx.Err()
	case <-time.After(d):
	}
	w.To = time.Now()
	after, err := s.ReconcileTotals(ctx, binaries)
	if err != nil {
		return w, err
	}
	w.ReconcilesPerSecond = PerSecond(before, after, w.To.Sub(w.From))
	return w, nil
}

// get fetches url with the bearer token.
func (s *Scraper) get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// SumCounter reads a Prometheus text exposition and returns, for each value of the series' controller label,
// the sum of the metric's samples. Samples without a controller label (a process gauge) count under "".
func SumCounter(text, metric string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue // a comment, another metric, or one whose name merely starts the same
		}
		labels := ""
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[labelValue(labels, "controller")] += v
	}
	return out
}

// Value returns the sum of a metric's samples over all its series: a process gauge's value.
func Value(text, metric string) (float64, bool) {
	sums := SumCounter(text, metric)
	total := 0.0
	for _, v := range sums {
		total += v
	}
	return total, len(sums) > 0
}

// labelValue returns one label's value from a series' label list (name="value",...); values here never hold
// commas or escaped quotes.
func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.TrimSpace(k) == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
