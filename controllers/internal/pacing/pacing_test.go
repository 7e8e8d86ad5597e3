package pacing

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPacer(t *testing.T) {
	p := New(time.Second)
	t0 := time.Unix(1000, 0)
	if d := p.Wait("a", t0); d != 0 {
		t.Fatalf("first write waits %v", d)
	}
	p.Wrote("a", t0)
	if d := p.Wait("a", t0.Add(300*time.Millisecond)); d != 700*time.Millisecond {
		t.Fatalf("a write 300ms later waits %v, want 700ms", d)
	}
	if d := p.Wait("b", t0); d != 0 {
		t.Fatalf("another object waits %v", d)
	}
	if d := p.Wait("a", t0.Add(time.Second)); d != 0 {
		t.Fatalf("after the interval: %v", d)
	}
	p.Forget("a")
	if d := p.Wait("a", t0.Add(time.Millisecond)); d != 0 {
		t.Fatalf("after forget: %v", d)
	}
}

func TestConditionsChanged(t *testing.T) {
	c := func(s metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: s, Reason: reason, Message: msg}}
	}
	for name, tc := range map[string]struct {
		old, updated []metav1.Condition
		want         bool
	}{
		"only the message":  {c("False", "RollingOut", "1 of 2"), c("False", "RollingOut", "2 of 2"), false},
		"status flips":      {c("False", "RollingOut", "x"), c("True", "RollingOut", "x"), true},
		"reason changes":    {c("False", "RollingOut", "x"), c("False", "Conflict", "x"), true},
		"a condition comes": {nil, c("False", "RollingOut", "x"), true},
		"nothing at all":    {nil, nil, false},
	} {
		if got := ConditionsChanged(tc.old, tc.updated); got != tc.want {
			t.Errorf("%s: changed = %v, want %v", name, got, tc.want)
		}
	}
}

func TestPacerWaitFor(t *testing.T) {
	p := New(time.Second)
	t0 := time.Unix(1000, 0)
	p.Wrote("a", t0)
	if d := p.WaitFor("a", 5*time.Second, t0.Add(2*time.Second)); d != 3*time.Second {
		t.Fatalf("a write 2s later with a 5s interval waits %v, want 3s", d)
	}
	if d := p.WaitFor("a", 5*time.Second, t0.Add(5*time.Second)); d != 0 {
		t.Fatalf("after the interval: %v", d)
	}
}
