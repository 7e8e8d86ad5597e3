package sizer

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/pacing"
)

// statusInterval spaces out a sizer's status writes while only counts move. Sizing a workload rolls it, and with
// many sizers the rollouts queue behind each other in the cluster's controllers: one workload's pods then change
// for a minute or more, and a write per change cost about seven writes per sizer (a thousand sizers: seven thousand
// writes, spent from the same client budget as the sizing itself). At one write per 15 seconds (the horizontal pod
// autoscaler's own period) the counts trail by at most that much; conditions are written at once.
const statusInterval = 15 * time.Second

// statusUrgent says whether a new status must be written at once: a new generation observed, a condition's status
// or reason changing (Ready turning True included), or what was applied, the budget or the selector changing.
// Counts, pod names and condition messages (which carry counts) can wait.
func statusUrgent(old, updated sizerv1alpha1.WorkloadSizerStatus) bool {
	return old.ObservedGeneration != updated.ObservedGeneration || pacing.ConditionsChanged(old.Conditions, updated.Conditions) ||
		old.Selector != updated.Selector || !equality.Semantic.DeepEqual(old.Resources, updated.Resources) ||
		budgetName(old) != budgetName(updated)
}

func budgetName(st sizerv1alpha1.WorkloadSizerStatus) string {
	if st.DisruptionBudget == nil {
		return ""
	}
	return st.DisruptionBudget.Name
}
