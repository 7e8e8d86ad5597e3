package main

import (
	"fmt"
	"time"
)

// seconds prints a duration in seconds with one decimal.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// orNone is s, or "no reason" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "no reason"
	}
	return s
}

// maxExamples bounds the violations a result quotes.
const maxExamples = 5
