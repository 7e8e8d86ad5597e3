package main

import (
	"time"
)

// resultFile is the form of each results file: the seed, when and at which commit it was made, and the results.
type resultFile struct {
	Seed    uint64    `json:"seed"`
	When    time.Time `json:"when"`
	Commit  string    `json:"commit"`
	Results any       `json:"results"`
}
