// Package wait polls a condition with a deadline: how the tools wait for a cluster, never with a fixed sleep.
package wait

import (
	"context"
	"time"
)

// Poll calls cond every interval until it returns true or an error, or until timeout (when positive) or ctx ends.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func() (bool, error)) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
