package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A condition's message fits the apiserver's bound whatever it says, cut between characters.
func TestMessageFits(t *testing.T) {
	long := strings.Repeat("é", MaxMessage)
	got := Message(long)
	if len(got) > MaxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("%d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if Message("short") != "short" {
		t.Fatal("a short message was changed")
	}
}

// Set replaces the condition of its type, cutting its message; the transition time moves only with the status.
func TestSet(t *testing.T) {
	var conds []metav1.Condition
	Set(&conds, metav1.Condition{Type: "Ready", Status: Status(false), Reason: "NotReady", Message: strings.Repeat("x", MaxMessage+1)})
	if len(conds) != 1 || len(conds[0].Message) > MaxMessage || conds[0].Status != metav1.ConditionFalse {
		t.Fatalf("%d conditions, message of %d bytes, status %s", len(conds), len(conds[0].Message), conds[0].Status)
	}
	since := conds[0].LastTransitionTime
	Set(&conds, metav1.Condition{Type: "Ready", Status: Status(false), Reason: "StillNotReady"})
	if len(conds) != 1 || conds[0].Reason != "StillNotReady" || !conds[0].LastTransitionTime.Equal(&since) {
		t.Fatalf("the same status moved its transition time, or was not replaced: %+v", conds)
	}
	Set(&conds, metav1.Condition{Type: "Ready", Status: Status(true), Reason: "Ready"})
	if conds[0].Status != metav1.ConditionTrue {
		t.Fatalf("status %s", conds[0].Status)
	}
}
