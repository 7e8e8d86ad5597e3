// Package workers runs many small API calls on a bounded number of goroutines: the tools create hundreds to
// thousands of objects (simulated nodes, benchmark workloads) and a client's rate limiter, not a loop, should be
// what paces them.
package workers

import (
	"errors"
	"sync"
)

// Run calls f(i) for every i in [0, n) on at most workers goroutines and returns every error, joined.
func Run(n, workers int, f func(i int) error) error {
	var mu sync.Mutex
	var errs []error
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
}
