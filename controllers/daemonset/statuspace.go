package daemonset

import (
	"sync"
	"time"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// statusInterval spaces out the status writes of a DaemonSet whose counters are still moving: while a thousand
// pods start, every pod event would otherwise cost a status write (and, since the cache lags the write, often a
// conflict and a second one). apps/v1 writes its status about once per sync; this keeps Keelson at most at one
// write per second per DaemonSet during a rollout, and writes the moment anything that matters changes.
const statusInterval = time.Second

// statusUrgent says whether a new status must be written at once rather than paced: a new generation observed, a
// condition whose status or reason changes, or a settled DaemonSet (every desired pod updated and available), so
// that readers waiting for the end never wait for the pacer. Counters moving on the way there can wait.
func statusUrgent(old, updated daemonsetv1alpha1.DaemonSetStatus) bool {
	if old.ObservedGeneration != updated.ObservedGeneration || len(old.Conditions) != len(updated.Conditions) {
		return true
	}
	for i, c := range updated.Conditions {
		o := old.Conditions[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason {
			return true
		}
	}
	settled := updated.NumberAvailable == updated.DesiredNumberScheduled &&
		updated.UpdatedNumberScheduled == updated.DesiredNumberScheduled && updated.NumberUnavailable == 0
	return settled
}

// statusPacer remembers when each DaemonSet's status was last written.
type statusPacer struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func newStatusPacer() *statusPacer { return &statusPacer{last: map[string]time.Time{}} }

// wait returns how long key's next paced write must wait; 0 means now.
func (p *statusPacer) wait(key string, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.last[key].Add(statusInterval).Sub(now); d > 0 {
		return d
	}
	return 0
}

// wrote records a status write.
func (p *statusPacer) wrote(key string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = now
}

// forget drops a deleted DaemonSet.
func (p *statusPacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}
