package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	calls := 0
	if err := Poll(context.Background(), time.Millisecond, time.Second, func() (bool, error) { calls++; return calls == 3, nil }); err != nil || calls != 3 {
		t.Fatalf("calls %d, err %v: polls until the condition holds", calls, err)
	}
	boom := errors.New("boom")
	if err := Poll(context.Background(), time.Millisecond, time.Second, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("a condition's error ends the poll: %v", err)
	}
	if err := Poll(context.Background(), time.Millisecond, 20*time.Millisecond, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the timeout ends the poll: %v", err)
	}
}
