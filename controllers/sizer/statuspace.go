package sizer

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/statuspace"
)

// statusInterval spaces out a sizer's status writes while only its target's counts move. Sizing a workload rolls
// it: its pods come and go for a few seconds, and a write per pod event would cost about ten writes per sizer
// (a thousand sizers: ten thousand writes, which the client budget spends instead of sizing the rest). Five
// seconds keeps a rollout at one or two such writes; conditions and the settled state are written at once.
const statusInterval = 5 * time.Second

// statusUrgent says whether a new status must be written at once: a new generation observed, a condition's status
// or reason changing, what was applied or the budget or selector changing, or the target settled (every replica
// ready and no extra pods). Counts moving on the way there can wait.
func statusUrgent(old, updated sizerv1alpha1.WorkloadSizerStatus) bool {
	if old.ObservedGeneration != updated.ObservedGeneration || statuspace.ConditionsChanged(old.Conditions, updated.Conditions) ||
		old.Selector != updated.Selector || !equality.Semantic.DeepEqual(old.Resources, updated.Resources) ||
		budgetName(old) != budgetName(updated) {
		return true
	}
	return updated.ReadyReplicas == updated.Replicas && updated.PodCount == updated.Replicas
}

func budgetName(st sizerv1alpha1.WorkloadSizerStatus) string {
	if st.DisruptionBudget == nil {
		return ""
	}
	return st.DisruptionBudget.Name
}
