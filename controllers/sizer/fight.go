package sizer

import (
	"time"
)

// A forced apply takes fields from their other manager; when that manager writes them back (a GitOps tool syncing
// its manifest, a script), the next forced apply takes them again, and so on forever. The sizer notices: a forced
// write needed again while its own spec has not changed is a take-back, and after fightLimit of them within
// fightWindow it stops forcing, so the other writer's apply wins and the sizer reports the conflict by name until
// its spec changes or the window passes.
const (
	fightLimit  = 3
	fightWindow = 10 * time.Minute
)

// fightLog is one sizer's forced writes: the generation of the spec its last forced write applied, and the times
// the fields had to be taken back since.
type fightLog struct {
	generation int64
	takeBacks  []time.Time
}

// beforeForcedWrite records a forced write about to happen at generation and says whether the sizer should still
// force it. A new generation starts a new log: the user asked for something new.
func (f fightLog) beforeForcedWrite(generation int64, now time.Time) (fightLog, bool) {
	if f.generation != generation {
		return fightLog{generation: generation}, true
	}
	var recent []time.Time
	for _, t := range f.takeBacks {
		if now.Sub(t) < fightWindow {
			recent = append(recent, t)
		}
	}
	if len(recent) >= fightLimit {
		return fightLog{generation: generation, takeBacks: recent}, false
	}
	return fightLog{generation: generation, takeBacks: append(recent, now)}, true
}

// fightError is a conflict met after the sizer stopped forcing because the fields kept being taken back.
type fightError struct{ err error }

func (e fightError) Error() string { return e.err.Error() }
func (e fightError) Unwrap() error { return e.err }

// beforeForcedWrite consults and updates the sizer's fight log.
func (r *Reconciler) beforeForcedWrite(key string, generation int64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fights == nil {
		r.fights = map[string]fightLog{}
	}
	next, force := r.fights[key].beforeForcedWrite(generation, now)
	r.fights[key] = next
	return force
}
