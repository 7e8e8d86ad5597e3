package sizer

import (
	"k8s.io/apimachinery/pkg/api/meta"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// A forced apply takes fields from their other manager; when that manager writes them back (a GitOps tool syncing
// its manifest, a script, a deploy pipeline running kubectl apply), the next forced apply takes them again, and so
// on forever: two rollouts per sync. The sizer notices: a forced write needed again while its own spec has not
// changed is a take-back, and after fightLimit of them it stops forcing, whatever time passed between them (a GitOps
// tool may sync every ten minutes, a pipeline once a day), so the other writer's apply wins and the sizer reports the
// conflict by name until its spec changes. The stop is read back from the sizer's own status (Conflict, reason
// FieldsTakenBack, at its generation), so a new leader does not fight again.
const fightLimit = 3

// fightLog is one sizer's forced writes: the generation of the spec its last forced write applied, and how many
// times the fields had to be taken back since.
type fightLog struct {
	generation int64
	takeBacks  int
}

// beforeForcedWrite records a forced write about to happen at generation and says whether the sizer should still
// force it. A new generation starts a new log (the user asked for something new), unless the status already says
// the sizer stopped at this generation.
func (f fightLog) beforeForcedWrite(generation int64, stopped bool) (fightLog, bool) {
	if stopped {
		return fightLog{generation: generation, takeBacks: fightLimit}, false
	}
	if f.generation != generation {
		return fightLog{generation: generation}, true
	}
	if f.takeBacks >= fightLimit {
		return f, false
	}
	f.takeBacks++
	return f, true
}

// stoppedForcing reports whether the sizer's status says it stopped forcing at its current generation.
func stoppedForcing(wls *sizerv1alpha1.WorkloadSizer) bool {
	c := meta.FindStatusCondition(wls.Status.Conditions, sizerv1alpha1.ConditionConflict)
	return c != nil && c.Reason == sizerv1alpha1.ReasonTakenBack && c.ObservedGeneration == wls.Generation
}

// fightError is a conflict met after the sizer stopped forcing because the fields kept being taken back.
type fightError struct{ err error }

func (e fightError) Error() string { return e.err.Error() }
func (e fightError) Unwrap() error { return e.err }
