// Package pacing spaces out status writes whose only news is counters moving.
//
// While a rollout runs, every pod event changes some count in a status (ready replicas, pods available), and a
// controller that writes each change spends its client budget on them, often twice (the cache lags the write, so
// the next write conflicts). Readers wait for conditions, not for every count on the way. So a controller writes
// at once when something that matters changes (a new generation observed, a condition's status or reason, the
// settled end state) and otherwise at most once per interval per object, from a requeue.
package pacing

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pacer remembers when each object's status was last written.
type Pacer struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
}

// New returns a Pacer that allows one paced write per interval per key.
func New(interval time.Duration) *Pacer {
	return &Pacer{interval: interval, last: map[string]time.Time{}}
}

// Wait returns how long key's next paced write must wait; 0 means now.
func (p *Pacer) Wait(key string, now time.Time) time.Duration {
	return p.WaitFor(key, p.interval, now)
}

// WaitFor is Wait with an interval of the caller's, for objects whose writes are spaced by their size.
func (p *Pacer) WaitFor(key string, interval time.Duration, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.last[key].Add(interval).Sub(now); d > 0 {
		return d
	}
	return 0
}

// Wrote records a status write of key.
func (p *Pacer) Wrote(key string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = now
}

// Forget drops a deleted object.
func (p *Pacer) Forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// ConditionsChanged says whether a condition appeared, disappeared, or changed its status or reason; a message
// alone (which often carries counts) does not count.
func ConditionsChanged(old, updated []metav1.Condition) bool {
	if len(old) != len(updated) {
		return true
	}
	for i, c := range updated {
		o := old[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason {
			return true
		}
	}
	return false
}
