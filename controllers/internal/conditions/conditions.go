// Package conditions sets the conditions of the three kinds' statuses one way: a status from a boolean, a message
// the apiserver accepts, a transition time that moves only with the status.
package conditions

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessage is the apiserver's bound on a condition's message, in bytes: a status with a longer one is refused
// whole.
const MaxMessage = 32768

// Status is True when ok, else False.
func Status(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// Set sets c on conds, its message cut to MaxMessage (meta.SetStatusCondition keeps the last transition time unless
// the status changes).
func Set(conds *[]metav1.Condition, c metav1.Condition) {
	c.Message = Message(c.Message)
	meta.SetStatusCondition(conds, c)
}

// Message is msg cut, between characters, to fit a condition (many failures with long messages add up).
func Message(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
