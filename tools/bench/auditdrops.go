package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// The apiserver's own counters of its audit pipeline: events it generated, and events a backend failed to take
// (a full batch buffer drops them and counts them here).
const (
	auditEventMetric = "apiserver_audit_event_total"
	auditErrorMetric = "apiserver_audit_error_total"
)

// auditCounters reads the apiserver's audit counters from its /metrics with the harness's own (admin) client.
// It fails when the apiserver exposes no audit event counter: auditing is then off, and every count of writes
// would be zero.
func auditCounters(ctx context.Context, cfg *rest.Config) (events, errors float64, err error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("the apiserver's metrics: %s", resp.Status)
	}
	return parseAuditCounters(string(b))
}

// parseAuditCounters sums the audit event and error counters of a metrics text over their labels. The error
// counter has no sample until the first error, so its absence is zero; the event counter's absence is an error.
func parseAuditCounters(text string) (events, errors float64, err error) {
	ev := metrics.SumCounter(text, auditEventMetric)
	if len(ev) == 0 {
		return 0, 0, fmt.Errorf("the apiserver exposes no %s: auditing is off, so no write could be counted", auditEventMetric)
	}
	for _, v := range ev {
		events += v
	}
	for _, v := range metrics.SumCounter(text, auditErrorMetric) {
		errors += v
	}
	return events, errors, nil
}
