package daemonset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: "x", Effect: effect}
}

func TestNodeEligibility(t *testing.T) {
	run := eligibility{shouldRun: true, shouldContinueRunning: true}
	stay := eligibility{shouldContinueRunning: true}
	none := eligibility{}
	affinity := func(op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: values}},
			}}}}}
	}
	for name, tc := range map[string]struct {
		labels        map[string]string
		taints        []corev1.Taint
		unschedulable bool
		spec          corev1.PodSpec
		want          eligibility
	}{
		"plain node":                    {want: run},
		"node selector matches":         {labels: map[string]string{"zone": "a"}, spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}, want: run},
		"node selector does not match":  {labels: map[string]string{"zone": "b"}, spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}, want: none},
		"node selector, label missing":  {spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}, want: none},
		"required affinity matches":     {labels: map[string]string{"zone": "a"}, spec: corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpIn, "a", "c")}, want: run},
		"required affinity mismatches":  {labels: map[string]string{"zone": "b"}, spec: corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpIn, "a")}, want: none},
		"affinity NotIn excludes":       {labels: map[string]string{"zone": "a"}, spec: corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpNotIn, "a")}, want: none},
		"spec.nodeName is another node": {spec: corev1.PodSpec{NodeName: "other"}, want: none},
		"spec.nodeName is this node":    {spec: corev1.PodSpec{NodeName: "node"}, want: run},
		"untolerated NoSchedule taint":  {taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectNoSchedule)}, want: stay},
		"untolerated NoExecute taint":   {taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)}, want: none},
		"PreferNoSchedule is ignored":   {taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectPreferNoSchedule)}, want: run},
		"tolerated NoExecute taint": {taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)},
			spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}, want: run},
		"toleration of another value": {taints: []corev1.Taint{taint("dedicated", corev1.TaintEffectNoSchedule)},
			spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "y"}}}, want: stay},
		"not-ready (automatic toleration)":      {taints: []corev1.Taint{taint(taintNotReady, corev1.TaintEffectNoExecute)}, want: run},
		"unreachable (automatic toleration)":    {taints: []corev1.Taint{taint(taintUnreachable, corev1.TaintEffectNoExecute)}, want: run},
		"disk pressure (automatic toleration)":  {taints: []corev1.Taint{taint(taintDiskPressure, corev1.TaintEffectNoSchedule)}, want: run},
		"memory pressure (automatic)":           {taints: []corev1.Taint{taint(taintMemoryPressure, corev1.TaintEffectNoSchedule)}, want: run},
		"pid pressure (automatic)":              {taints: []corev1.Taint{taint(taintPIDPressure, corev1.TaintEffectNoSchedule)}, want: run},
		"cordoned node (automatic toleration)":  {taints: []corev1.Taint{taint(taintUnschedulable, corev1.TaintEffectNoSchedule)}, unschedulable: true, want: run},
		"network unavailable, pod network":      {taints: []corev1.Taint{taint(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)}, want: stay},
		"network unavailable, host network pod": {taints: []corev1.Taint{taint(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)}, spec: corev1.PodSpec{HostNetwork: true}, want: run},
	} {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Labels: tc.labels},
				Spec: corev1.NodeSpec{Taints: tc.taints, Unschedulable: tc.unschedulable}}
			spec := tc.spec.DeepCopy()
			spec.Tolerations = withDaemonTolerations(spec.Tolerations, spec.HostNetwork)
			if got := nodeEligibility(node, spec); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWithDaemonTolerationsKeepsTheUsersOwn(t *testing.T) {
	own := corev1.Toleration{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		TolerationSeconds: new(int64(30))}
	got := withDaemonTolerations([]corev1.Toleration{own}, false)
	count := 0
	for _, tol := range got {
		if tol.Key == taintNotReady {
			count++
			if tol.TolerationSeconds == nil || *tol.TolerationSeconds != 30 {
				t.Errorf("the user's not-ready toleration was replaced: %+v", tol)
			}
		}
		if tol.Key == taintNetworkUnavailable {
			t.Errorf("network-unavailable toleration added to a pod-network pod")
		}
	}
	if count != 1 || len(got) != 6 {
		t.Fatalf("got %d tolerations (%d for not-ready), want 6 with one for not-ready: %+v", len(got), count, got)
	}
}

func TestNodeIsDown(t *testing.T) {
	for name, tc := range map[string]struct {
		conditions []corev1.NodeCondition
		want       bool
	}{
		"ready":        {[]corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, false},
		"not ready":    {[]corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, true},
		"unreachable":  {[]corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}, true},
		"no condition": {nil, true},
		"other only":   {[]corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse}}, true},
	} {
		if got := nodeIsDown(&corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conditions}}); got != tc.want {
			t.Errorf("%s: nodeIsDown = %v, want %v", name, got, tc.want)
		}
	}
}
