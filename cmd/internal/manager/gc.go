package manager

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set. A controller's heap is mostly its
// caches, which live as long as the process: Go's default (100) lets the heap grow to twice that before
// collecting, which doubles the memory a cluster of a thousand nodes costs for little gain. At 50 the heap stays
// within 1.5 times the live caches, for a little more collector work.
const defaultGCPercent = 50

// tuneGC applies defaultGCPercent unless the operator chose GOGC; it returns the percentage in effect.
func tuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		p := debug.SetGCPercent(100) // read the current value...
		debug.SetGCPercent(p)        // ...and put it back
		return p
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// memoryLimitRatio is the share of the container's memory limit the Go runtime aims to stay under (GOMEMLIMIT). The
// collector's target alone (1.5 times the live heap) knows nothing of the limit: a burst of work on a large cluster
// could take the heap past it and the kernel would kill the process, where the runtime, told of the limit, collects
// harder first. The rest of the limit is for what the runtime does not count (stacks of the kernel's, the binary).
const memoryLimitRatio = 0.9

// tuneMemoryLimit sets GOMEMLIMIT to memoryLimitRatio of the cgroup's memory limit, unless the operator set
// GOMEMLIMIT (or AUTOMEMLIMIT=off), and follows the limit every minute until ctx ends (a resize of the controller's
// own pod changes it: a limit derived once would outlive its source). It returns the limit in effect, 0 for none;
// a system without cgroups has none, and another error leaves the runtime's own.
func tuneMemoryLimit(ctx context.Context) (int64, error) {
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithRefreshInterval(ctx, time.Minute))
	if errors.Is(err, memlimit.ErrCgroupsNotSupported) {
		err = nil
	}
	if limit == math.MaxInt64 {
		limit = 0
	}
	return limit, err
}
