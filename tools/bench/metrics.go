package main

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

// reconcileMetric is controller-runtime's counter of finished reconciles, one series per controller and result.
const reconcileMetric = "controller_runtime_reconcile_total"

// metricsReader is the harness's own identity for scraping: a service account allowed to get /metrics, as a
// Prometheus would be. Its RBAC is cluster-scoped, so reset removes it with the namespaces.
const metricsReader = "keelson-bench-metrics"

// scraper reads the controllers' /metrics endpoints directly on their pod IPs (the controllers run on the local
// cluster's real node, whose pod network the host reaches).
type scraper struct {
	c         client.Client
	releaseNS string
	release   string
	token     string
	http      *http.Client
}

// newScraper grants the harness's service account the right to read metrics and asks the apiserver for a token.
func newScraper(ctx context.Context, c client.Client, ns, releaseNS, release string) (*scraper, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: metricsReader, Namespace: ns}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: metricsReader, Namespace: ns}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			return nil, err
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("a token for %s: %w", metricsReader, err)
	}
	return &scraper{c: c, releaseNS: releaseNS, release: release, token: tr.Status.Token,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// The metrics certificate is issued for the controllers' Service names, not the pod IPs dialled here;
			// the token guards access.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		}}}, nil
}

// deleteMetricsReader removes the cluster-scoped RBAC that newScraper made.
func deleteMetricsReader(ctx context.Context, c client.Client) error {
	for _, o := range []client.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsReader}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsReader}}} {
		if err := client.IgnoreNotFound(c.Delete(ctx, o)); err != nil {
			return err
		}
	}
	return nil
}

// Reconciles returns the reconciles every running pod of the binary has finished, summed over its pods (only
// the leader reconciles) and its controllers.
func (s *scraper) Reconciles(ctx context.Context, binary string) (float64, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(s.releaseNS), client.MatchingLabels{
		"app.kubernetes.io/name": binary, "app.kubernetes.io/instance": s.release}); err != nil {
		return 0, err
	}
	total, scraped := 0.0, 0
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		scraped++
		text, err := s.get(ctx, "https://"+net.JoinHostPort(p.Status.PodIP, "8443")+"/metrics")
		if err != nil {
			return 0, fmt.Errorf("metrics of %s: %w", p.Name, err)
		}
		for _, v := range SumCounter(text, reconcileMetric) {
			total += v
		}
	}
	if scraped == 0 {
		// Zero reconciles would read as a perfectly idle controller.
		return 0, fmt.Errorf("no running %s pod in %s to read reconciles from", binary, s.releaseNS)
	}
	return total, nil
}

// get fetches url with the bearer token.
func (s *scraper) get(ctx context.Context, url string) (string, error) {
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
// the sum of the counter's samples. Samples without a controller label count under "".
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

// idleWindow is a stretch of time in which the harness changed nothing.
type idleWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// ReconcilesPerSecond is, per binary, the reconciles its controllers finished in the window over its length.
	ReconcilesPerSecond map[string]float64 `json:"reconcilesPerSecond"`
}

// idle sits still for d and reports what the binaries' controllers reconciled meanwhile.
func idle(ctx context.Context, s *scraper, binaries []string, d time.Duration) (idleWindow, error) {
	w := idleWindow{ReconcilesPerSecond: map[string]float64{}}
	before := map[string]float64{}
	for _, b := range binaries {
		v, err := s.Reconciles(ctx, b)
		if err != nil {
			return w, err
		}
		before[b] = v
	}
	w.From = time.Now()
	select {
	case <-ctx.Done():
		return w, ctx.Err()
	case <-time.After(d):
	}
	w.To = time.Now()
	for _, b := range binaries {
		v, err := s.Reconciles(ctx, b)
		if err != nil {
			return w, err
		}
		w.ReconcilesPerSecond[b] = (v - before[b]) / w.To.Sub(w.From).Seconds()
	}
	return w, nil
}
