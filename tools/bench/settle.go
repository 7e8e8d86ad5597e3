package main

import (
	"context"
	"fmt"
	"time"
)

// settleQuiet is how long the measured controllers must have written nothing before the idle window opens: the
// trailing status writes of the last convergence belong to that convergence, not to steady state.
const settleQuiet = 30 * time.Second

// lastWriteBy returns when the newest write by any of users happened (zero when none did).
func lastWriteBy(events []WriteEvent, users map[string]bool) time.Time {
	var last time.Time
	for _, e := range events {
		if users[e.User] && e.At.After(last) {
			last = e.At
		}
	}
	return last
}

// settle waits, up to deadline, until none of users has written to the audit log for quiet, and returns how long
// it waited. A cluster that never goes quiet fails the run: its idle window would measure the tail of the work.
func settle(ctx context.Context, auditLog string, users map[string]string, quiet, deadline time.Duration) (time.Duration, error) {
	who := map[string]bool{}
	for _, u := range users {
		who[u] = true
	}
	start := time.Now()
	err := poll(ctx, deadline, func() (bool, error) {
		events, err := ReadWritesSince(auditLog, time.Now().Add(-quiet))
		if err != nil {
			return false, err
		}
		return lastWriteBy(events, who).IsZero() && time.Since(start) >= quiet, nil
	})
	if err != nil {
		return time.Since(start), fmt.Errorf("the controllers did not stop writing for %s within %s: %w", quiet, deadline, err)
	}
	return time.Since(start), nil
}
