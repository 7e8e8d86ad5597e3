package daemonset

import (
	"time"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
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
	if old.ObservedGeneration != updated.ObservedGeneration || pacing.ConditionsChanged(old.Conditions, updated.Conditions) {
		return true
	}
	settled := updated.NumberAvailable == updated.DesiredNumberScheduled &&
		updated.UpdatedNumberScheduled == updated.DesiredNumberScheduled && updated.NumberUnavailable == 0
	return settled
}
