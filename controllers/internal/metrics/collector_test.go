package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type thing struct {
	name       string
	conditions []metav1.Condition
	pods       float64
	phases     []string
}

func cond(t, s, r string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: r}
}

func testKind(objs []thing, err error) Kind[thing] {
	return Kind[thing]{
		Name:       "thing",
		List:       func(context.Context) ([]thing, error) { return objs, err },
		Conditions: func(t thing) []metav1.Condition { return t.conditions },
		Gauges: []Gauge[thing]{
			{Name: "pods", Help: "Pods.", Values: func(t thing) map[string]float64 { return map[string]float64{"": t.pods} }},
			{Name: "parts", Help: "Parts by phase.", Label: LabelPhase, Known: []string{"Ready", "Failed"},
				Values: func(t thing) map[string]float64 {
					out := map[string]float64{}
					for _, p := range t.phases {
						out[p]++
					}
					return out
				}},
		},
	}
}

func TestCountConditions(t *testing.T) {
	got := CountConditions([][]metav1.Condition{
		{cond("Ready", "True", "Ready"), cond("Conflict", "False", "NoConflict")},
		{cond("Ready", "False", "NotReady"), cond("Conflict", "True", "AnotherSizer")},
		{cond("Ready", "True", "Ready")},
		nil,
	})
	want := map[ConditionKey]int{
		{"Ready", "True", "Ready"}: 2, {"Ready", "False", "NotReady"}: 1,
		{"Conflict", "False", "NoConflict"}: 1, {"Conflict", "True", "AnotherSizer"}: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestSumReportsKnownValuesAndZeroWithoutObjects(t *testing.T) {
	k := testKind(nil, nil)
	if diff := cmp.Diff(map[string]float64{"": 0}, Sum(k.Gauges[0], nil)); diff != "" {
		t.Errorf("unlabelled gauge without objects (-want +got):\n%s", diff)
	}
	got := Sum(k.Gauges[1], []thing{{phases: []string{"Ready", "Pending"}}, {phases: []string{"Ready"}}})
	if diff := cmp.Diff(map[string]float64{"Ready": 2, "Pending": 1, "Failed": 0}, got); diff != "" {
		t.Errorf("labelled gauge (-want +got):\n%s", diff)
	}
}

func TestCollectorReportsOnlyOnTheLeader(t *testing.T) {
	objs := []thing{
		{conditions: []metav1.Condition{cond("Ready", "True", "Ready")}, pods: 3, phases: []string{"Ready"}},
		{conditions: []metav1.Condition{cond("Ready", "False", "NotReady")}, pods: 2, phases: []string{"Failed", "Ready"}},
	}
	leading := false
	c := NewCollector(testKind(objs, nil), func() bool { return leading })
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("a follower reported %d series", n)
	}
	leading = true
	want := `
# HELP keelson_thing_condition Number of thing objects whose status condition of this type has this status and reason (reported by the leader).
# TYPE keelson_thing_condition gauge
keelson_thing_condition{condition="Ready",reason="NotReady",status="False"} 1
keelson_thing_condition{condition="Ready",reason="Ready",status="True"} 1
# HELP keelson_thing_parts Parts by phase.
# TYPE keelson_thing_parts gauge
keelson_thing_parts{phase="Failed"} 1
keelson_thing_parts{phase="Ready"} 2
# HELP keelson_thing_pods Pods.
# TYPE keelson_thing_pods gauge
keelson_thing_pods 5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The collector's descriptions are consistent with what it reports: a registry accepts it.
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsNothingWhenTheReadFails(t *testing.T) {
	c := NewCollector(testKind(nil, errors.New("cache not synced")), func() bool { return true })
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("a failed read reported %d series", n)
	}
}

// Faults are reported by object, for the objects at fault only, with two faults of one reason summed into one
// series (a registry refuses two series with the same labels).
func TestCollectorReportsFaultsByObject(t *testing.T) {
	objs := []thing{{name: "a", phases: []string{"Ready"}}, {name: "b", phases: []string{"Failed", "Failed", "Degraded"}}}
	k := testKind(objs, nil)
	k.Gauges = nil
	k.Conditions = func(thing) []metav1.Condition { return nil }
	k.Faults = func(t thing) (types.NamespacedName, []Fault) {
		var out []Fault
		for _, p := range t.phases {
			if p != "Ready" {
				out = append(out, Fault{Reason: p, Value: 1})
			}
		}
		return types.NamespacedName{Namespace: "tenant", Name: t.name}, out
	}
	c := NewCollector(k, func() bool { return true })
	want := `
# HELP keelson_thing_fault What is wrong with a thing object, by its namespace and name: 1 for each reason (or the number of its parts at fault), reported by the leader for the objects at fault only.
# TYPE keelson_thing_fault gauge
keelson_thing_fault{object_name="b",object_namespace="tenant",reason="Degraded"} 1
keelson_thing_fault{object_name="b",object_namespace="tenant",reason="Failed"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "keelson_thing_fault"); err != nil {
		t.Fatal(err)
	}
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		t.Fatal(err)
	}
}

type elector chan struct{}

func (e elector) Elected() <-chan struct{} { return e }

func TestLeadingFollowsElection(t *testing.T) {
	e := make(elector)
	leading := Leading(e)
	if leading() {
		t.Fatal("leading before the election")
	}
	close(e)
	if !leading() {
		t.Fatal("not leading after the election")
	}
}
