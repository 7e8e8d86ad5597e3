package manager

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set. A controller's heap is mostly its
// caches, which live as long as the process: Go's default (100) lets the heap grow to twice that before
// collecting, which doubles the memory a cluster of a thousand nodes costs for little gain. At 50 the heap stays
// within 1.5 times the live caches, for a little more collector work.
const defaultGCPercent = 50

// tuneGC applies defaultGCPercent unless the operator chose GOGC; it returns the percentage in effect.
func tuneGC() int {
	if _, set := os.LookupEnv("GOGC"); set {
		p := debug.SetGCPercent(100) // read the current value...
		debug.SetGCPercent(p)        // ...and put it back
		return p
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}
