package workers

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestRun(t *testing.T) {
	var sum atomic.Int64
	if err := Run(100, 8, func(i int) error { sum.Add(int64(i)); return nil }); err != nil || sum.Load() != 4950 {
		t.Fatalf("sum %d, err %v: every index must run once", sum.Load(), err)
	}
	err := Run(10, 3, func(i int) error {
		if i%5 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	if err == nil || len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Fatalf("want both errors joined, got %v", err)
	}
	if err := Run(0, 0, func(int) error { return errors.New("never") }); err != nil {
		t.Fatalf("no work: %v", err)
	}
}
