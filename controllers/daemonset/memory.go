package daemonset

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// vanishedPods remembers, per DaemonSet key, the pods (name and UID) that left the cache without being seen
// terminating.
type vanishedPods struct {
	mu   sync.Mutex
	pods map[string]map[string]types.UID
}

func newVanishedPods() *vanishedPods { return &vanishedPods{pods: map[string]map[string]types.UID{}} }

func (v *vanishedPods) add(key, name string, uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pods[key] == nil {
		v.pods[key] = map[string]types.UID{}
	}
	v.pods[key][name] = uid
}

// take returns and forgets the pods recorded for key.
func (v *vanishedPods) take(key string) map[string]types.UID {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.pods[key]
	delete(v.pods, key)
	return out
}

func (v *vanishedPods) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.pods, key)
}

// seenSet remembers the DaemonSets whose first pass in this process is done, by key and UID (a DaemonSet deleted
// and created again under the same name is a new one).
type seenSet struct {
	mu   sync.Mutex
	uids map[string]types.UID
}

func newSeenSet() *seenSet { return &seenSet{uids: map[string]types.UID{}} }

func (s *seenSet) has(key string, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids[key] == uid
}

func (s *seenSet) add(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids[key] = uid
}

func (s *seenSet) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uids, key)
}
