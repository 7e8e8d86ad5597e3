package daemonset

import (
	"strings"
	"sync"
	"time"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// failureBackoff remembers, per DaemonSet and node, how long failed pods must wait before they are replaced. The
// delay doubles with each failure up to a maximum, and starts over after a long quiet spell.
type failureBackoff struct {
	initial, max time.Duration

	mu      sync.Mutex
	entries map[string]backoffEntry
}

type backoffEntry struct {
	delay time.Duration
	until time.Time
}

func newFailureBackoff(initial, maxDelay time.Duration) *failureBackoff {
	return &failureBackoff{initial: initial, max: maxDelay, entries: map[string]backoffEntry{}}
}

// failed records a failure at now and starts the next, longer, wait.
func (b *failureBackoff) failed(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	switch {
	case !ok || now.Sub(e.until) > 2*b.max:
		e.delay = b.initial
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.until = now.Add(e.delay)
	b.entries[key] = e
}

// remaining is how long key must still wait at now; 0 when it need not.
func (b *failureBackoff) remaining(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok && now.Before(e.until) {
		return e.until.Sub(now)
	}
	return 0
}

// forget drops every entry whose key starts with prefix (a deleted DaemonSet's).
func (b *failureBackoff) forget(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if strings.HasPrefix(k, prefix) {
			delete(b.entries, k)
		}
	}
}

// backoffKey names a node's failed-pod backoff for one DaemonSet and template revision: a new template starts
// without the backoff the old one earned (a fixed template must not wait out the broken one's 15 minutes).
func backoffKey(ds *daemonsetv1alpha1.DaemonSet, updateHash, node string) string {
	// namespace/name first, so that forgetting the DaemonSet by its key alone drops its entries; then the UID, so
	// that one created again under the name starts afresh.
	return ds.Namespace + "/" + ds.Name + "/" + string(ds.UID) + "/" + updateHash + "/" + node
}
