// Package expectations remembers the pod creations and deletions a controller has asked for and not yet seen in
// its informer cache, so that it does not act on a stale cache (and create a second pod for a node) in between.
// It follows kube-controller-manager's idea: a controller acts only when its expectations are satisfied.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultTTL is how long unmet expectations block a controller before they are assumed lost (a watch event that
// never came); then the controller relists and acts again.
const DefaultTTL = 5 * time.Minute

// Expectations tracks, per owner key, how many creations and which deletions are still to be observed.
// It is safe for concurrent use.
type Expectations struct {
	mu  sync.Mutex
	ttl time.Duration
	now func() time.Time
	by  map[string]*entry
}

type entry struct {
	creations int
	deletions map[types.UID]bool
	set       time.Time
}

// New returns empty expectations with DefaultTTL.
func New() *Expectations {
	return &Expectations{ttl: DefaultTTL, now: time.Now, by: map[string]*entry{}}
}

func (e *Expectations) get(key string) *entry {
	en := e.by[key]
	if en == nil {
		en = &entry{deletions: map[types.UID]bool{}}
		e.by[key] = en
	}
	en.set = e.now()
	return en
}

// ExpectCreations records that n creations for key are about to be made.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).creations += n
}

// ExpectDeletions records that the objects with uids are about to be deleted.
func (e *Expectations) ExpectDeletions(key string, uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.get(key)
	for _, uid := range uids {
		en.deletions[uid] = true
	}
}

// CreationObserved records one creation seen in the cache, or one that failed and will never be seen.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.by[key]; en != nil && en.creations > 0 {
		en.creations--
	}
}

// DeletionObserved records the deletion of uid seen in the cache, or one that failed and will never be seen.
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.by[key]; en != nil {
		delete(en.deletions, uid)
	}
}

// Satisfied reports whether every expected creation and deletion for key has been observed, or the expectations
// are older than the TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.by[key]
	if en == nil || (en.creations == 0 && len(en.deletions) == 0) {
		return true
	}
	return e.now().Sub(en.set) > e.ttl
}

// Forget drops everything expected for key (its owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.by, key)
}
