package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A condition's message fits the apiserver's bound whatever the steps say, cut between characters.
func TestConditionMessageFits(t *testing.T) {
	long := strings.Repeat("é", maxConditionMessage)
	got := conditionMessage(long)
	if len(got) > maxConditionMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("%d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if conditionMessage("short") != "short" {
		t.Fatal("a short message was changed")
	}
}
