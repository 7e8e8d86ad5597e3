package sizer

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// Only a change of a resource whose resizePolicy is RestartContainer restarts the container.
func TestRestartsOnResize(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}}}}}
	limits := func(k corev1.ResourceName, v string) []sizerv1alpha1.AppliedResources {
		return []sizerv1alpha1.AppliedResources{{ContainerName: "app", Limits: corev1.ResourceList{k: resource.MustParse(v)}}}
	}
	if got := restartsOnResize(pod, limits(corev1.ResourceMemory, "96Mi")); got == "" {
		t.Error("a memory change with RestartContainer restarts nothing")
	}
	if got := restartsOnResize(pod, limits(corev1.ResourceMemory, "64Mi")); got != "" {
		t.Errorf("an unchanged memory limit restarts: %s", got)
	}
	if got := restartsOnResize(pod, limits(corev1.ResourceCPU, "200m")); got != "" {
		t.Errorf("a cpu change with the default policy restarts: %s", got)
	}
}

// A restart budget counts the pods as they are: per PodDisruptionBudget among every pod it selects, else per the
// workload's maxUnavailable; a source that can never allow a pod down says so (none).
func TestBudgetFor(t *testing.T) {
	serving := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	down := *serving.DeepCopy()
	down.Status.Conditions[0].Status = corev1.ConditionFalse
	otherDown := *down.DeepCopy()
	otherDown.Labels = map[string]string{"app": "web", "track": "canary"}
	deployment := func(strategy string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		switch strategy {
		case "recreate":
			d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		case "":
		default:
			mu := intstr.Parse(strategy)
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &mu}
		}
		return d
	}
	pdb := func(minAvailable int32, seen bool) policyv1.PodDisruptionBudget {
		b := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		if seen {
			b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, ExpectedPods: 3, DesiredHealthy: minAvailable}
		}
		return b
	}
	other := pdb(0, true)
	other.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	canary := pdb(0, false)
	canary.Spec.Selector.MatchLabels = map[string]string{"track": "canary"}
	three := []corev1.Pod{serving, serving, serving}
	for name, tc := range map[string]struct {
		workload *appsv1.Deployment
		pdbs     []policyv1.PodDisruptionBudget
		pods     []corev1.Pod
		// others are pods of other workloads that the budgets select too.
		others []corev1.Pod
		takes  int
		none   bool
	}{
		"maxUnavailable 1, all serving":        {workload: deployment("1"), pods: three, takes: 1},
		"maxUnavailable 1, one down":           {workload: deployment("1"), pods: []corev1.Pod{down, serving, serving}, takes: 0},
		"maxUnavailable 1, one missing":        {workload: deployment("1"), pods: []corev1.Pod{serving, serving}, takes: 0},
		"the default 25% of 3 is none":         {workload: deployment(""), pods: three, none: true},
		"maxUnavailable 0 is none":             {workload: deployment("0"), pods: three, none: true},
		"recreate allows every pod":            {workload: deployment("recreate"), pods: three, takes: 3},
		"a budget wins over the strategy":      {workload: deployment("0"), pdbs: []policyv1.PodDisruptionBudget{pdb(2, true)}, pods: three, takes: 1},
		"a budget counts the pods as they are": {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{pdb(2, true)}, pods: []corev1.Pod{down, serving, serving}, takes: 0},
		"a budget counts the pods of others":   {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{pdb(2, true)}, pods: []corev1.Pod{serving, serving}, others: []corev1.Pod{otherDown}, takes: 0},
		"a budget not yet counted: its spec":   {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{pdb(2, false)}, pods: three, takes: 1},
		"a budget that never allows is none":   {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{pdb(3, false)}, pods: three, none: true},
		"a budget of other pods is not ours":   {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{other}, pods: three, takes: 1},
		"a pod no budget selects: the strategy": {workload: deployment("1"), pdbs: []policyv1.PodDisruptionBudget{canary},
			pods: []corev1.Pod{serving, serving, otherDown}, takes: 0},
	} {
		t.Run(name, func(t *testing.T) {
			selected := func(sel labels.Selector) []corev1.Pod {
				var out []corev1.Pod
				for _, p := range append(slices.Clone(tc.pods), tc.others...) {
					if sel.Matches(labels.Set(p.Labels)) {
						out = append(out, p)
					}
				}
				return out
			}
			b := budgetFor(tc.workload, 3, tc.pdbs, tc.pods, selected)
			takes := 0
			for range 5 {
				if b.take(&serving) {
					takes++
				}
			}
			if takes != tc.takes || (b.none != "") != tc.none {
				t.Errorf("took %d (none %q), want %d (none %v)", takes, b.none, tc.takes, tc.none)
			}
		})
	}
}
