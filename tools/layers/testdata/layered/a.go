// Package layered has a file of a type and a file of its methods above it.
package layered

// T is the type.
type T struct{ n int }
