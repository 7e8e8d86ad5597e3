// Package tangled has two files that use each other.
package tangled

// A is used by b.go.
func A() int { return b() }
