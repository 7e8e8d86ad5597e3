package main

import (
	"context"
	"time"

	"github.com/keelson-dev/keelson/tools/internal/wait"
)

// pollUntil polls cond every 500ms until it holds, fails, or timeout (10 minutes when 0) passes.
func pollUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	return wait.Poll(ctx, 500*time.Millisecond, timeout, cond)
}

// background runs run until the returned stop is called (or ctx ends); stop waits for it to return, and may be
// called again.
func background(ctx context.Context, run func(context.Context)) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(rctx) }()
	return func() { cancel(); <-done }
}

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
