// Package expectations remembers the pod creations, deletions and updates a controller has asked for and not yet
// seen in its informer cache, so that it does not act on a stale cache (and create a second pod for a node) in between.
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

// Expectations tracks, per owner key, how many creations, which deletions and which updates are still to be
// observed.
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
	// updates maps an updated object to the state the cache must show for the update to count as seen.
	updates map[types.UID]string
	set     time.Time
}

// pending reports whether anything is still to be observed.
func (en *entry) pending() bool {
	return en.creations > 0 || len(en.deletions) > 0 || len(en.updates) > 0
}

// New returns empty expectations with DefaultTTL.
func New() *Expectations {
	return &Expectations{ttl: DefaultTTL, now: time.Now, by: map[string]*entry{}}
}

// get returns key's entry for new expectations and restarts its TTL. An entry whose TTL has run out is started
// afresh, as kube-controller-manager's SetExpectations does: the creations and deletions it still counted were
// assumed lost when Satisfied gave up on them, and adding to them would hold every later pass back for another TTL.
func (e *Expectations) get(key string) *entry {
	now := e.now()
	en := e.by[key]
	if en == nil || now.Sub(en.set) > e.ttl {
		en = &entry{deletions: map[types.UID]bool{}, updates: map[types.UID]string{}}
		e.by[key] = en
	}
	en.set = now
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

// ExpectUpdate records that the object with uid is about to be updated, and that the update is seen once the cache
// shows the object in state (a label's new value, say).
func (e *Expectations) ExpectUpdate(key string, uid types.UID, state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(key).updates[uid] = state
}

// UpdateObserved records that the cache shows the object with uid in state: an expected update to that state is
// seen.
func (e *Expectations) UpdateObserved(key string, uid types.UID, state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.by[key]; en != nil && en.updates[uid] == state {
		delete(en.updates, uid)
	}
}

// UpdateAbandoned drops the expected update of uid: it failed and will never be seen.
func (e *Expectations) UpdateAbandoned(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.by[key]; en != nil {
		delete(en.updates, uid)
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

// DeletionObserved records the deletion of uid seen in the cache, or one that failed and will never be seen. An
// update still expected of it will never be seen either.
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.by[key]; en != nil {
		delete(en.deletions, uid)
		delete(en.updates, uid)
	}
}

// Satisfied reports whether every expected creation, deletion and update for key has been observed, or the expectations
// are older than the TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.by[key]
	if en == nil || !en.pending() {
		return true
	}
	return e.now().Sub(en.set) > e.ttl
}

// Remaining is how long the unmet expectations for key will still hold a pass back before the TTL lets it go: 0
// when they are satisfied or expired. A controller held back requeues after it, so that a lost event does not leave
// the owner asleep until something else wakes it.
func (e *Expectations) Remaining(key string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.by[key]
	if en == nil || !en.pending() {
		return 0
	}
	if left := e.ttl - e.now().Sub(en.set); left > 0 {
		return left
	}
	return 0
}

// Forget drops everything expected for key (its owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.by, key)
}
