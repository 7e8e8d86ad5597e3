package main

import (
	"context"
	"time"

	"github.com/keelson-dev/keelson/tools/internal/metrics"
)

// idleWindow is a stretch of time in which the harness changed nothing.
type idleWindow struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// ReconcilesPerSecond is, per binary, the reconciles its controllers finished in the window over its length.
	ReconcilesPerSecond map[string]float64 `json:"reconcilesPerSecond"`
}

// idle sits still for d and reports what the binaries' controllers reconciled meanwhile.
func idle(ctx context.Context, s *metrics.Scraper, binaries []string, d time.Duration) (idleWindow, error) {
	w := idleWindow{ReconcilesPerSecond: map[string]float64{}}
	before := map[string]float64{}
	for _, b := range binaries {
		v, err := s.ReconcileTotal(ctx, b)
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
		v, err := s.ReconcileTotal(ctx, b)
		if err != nil {
			return w, err
		}
		w.ReconcilesPerSecond[b] = (v - before[b]) / w.To.Sub(w.From).Seconds()
	}
	return w, nil
}
