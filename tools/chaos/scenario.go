package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// FaultResult is one injected fault.
type FaultResult struct {
	Fault Fault `json:"fault"`
	// Handover is how long after the fault started another replica held the lease (for a freeze: not the freeze's
	// whole length).
	Handover time.Duration `json:"handover"`
	// WorkLeft and WorkAsked are the round's units of work (nodes to roll, Deployments to resize or to move to the
	// round's template) not yet done when the fault landed, and all of them: a fault that lands once the work is done
	// tests nothing, and fails the run.
	WorkLeft  int `json:"workLeft"`
	WorkAsked int `json:"workAsked"`
}

// Result is one scenario's run: what was injected, what the invariant sampler saw, and how long recovery took.
type Result struct {
	Scenario   string        `json:"scenario"`
	Controller string        `json:"controller"`
	Invariant  string        `json:"invariant"`
	Size       string        `json:"size"`
	Faults     []FaultResult `json:"faults"`
	// Samples is how many times the invariant was checked; Violations how many samples broke it.
	Samples    int      `json:"samples"`
	Violations int      `json:"violations"`
	ReadErrors int      `json:"readErrors"`
	Examples   []string `json:"examples,omitempty"`
	// Recovery runs from the start of the last fault until everything converged.
	Recovery time.Duration `json:"recovery"`
	Duration time.Duration `json:"duration"`
}

// workload is what a leader-death scenario drives: it sets itself up, changes something the controller must act
// on (a rollout, a resize), checks its invariant on what the apiserver holds now, and says when it converged.
type workload interface {
	// setUp creates the objects and waits until the controller has converged on them.
	setUp(ctx context.Context) error
	// change asks the controller for work: round is the fault's number.
	change(ctx context.Context, round int) error
	// check samples the invariant, returning a description of each violation.
	check(ctx context.Context) ([]string, error)
	// converged reports whether the controller finished all the work asked of it.
	converged(ctx context.Context) (bool, error)
	// left counts the units of the last round's work not done yet, of total.
	left(ctx context.Context) (left, total int, err error)
	// maxHold is the longest the fault waits after the work is asked: the work's expected length, so that the fault
	// lands a moment into it.
	maxHold() time.Duration
}

// samplePeriod is how often the invariant is checked: twice a second.
const samplePeriod = 500 * time.Millisecond

// sampler checks a workload's invariant every samplePeriod until stopped.
type sampler struct {
	mu         sync.Mutex
	samples    int
	violations int
	examples   []string
	// errors counts failed reads, err is the last one.
	errors int
	err    error
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context, w workload) {
	t := time.NewTicker(samplePeriod)
	defer t.Stop()
	for {
		s.sample(ctx, w)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample checks the invariant once. A failed read is not a sample (a read during a fault may time out); a run with
// more than one failed read in ten fails.
func (s *sampler) sample(ctx context.Context, w workload) {
	bad, err := w.check(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.errors++
			s.err = err
		}
		return
	}
	s.samples++
	if len(bad) > 0 {
		s.violations++
		for _, b := range bad {
			if len(s.examples) < maxExamples {
				s.examples = append(s.examples, fmt.Sprintf("%s: %s", time.Now().UTC().Format("15:04:05.0"), b))
			}
		}
	}
}

// leaderDeath runs one leader-death scenario: faults leader deaths of the controller, each a moment after asking
// the workload for work, while the invariant is sampled; then waits for convergence.
func leaderDeath(ctx context.Context, in *injector, w workload, r Result, faults int, rng *rand.Rand) (Result, error) {
	began := time.Now()
	if err := w.setUp(ctx); err != nil {
		return r, fmt.Errorf("setting up: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	s := &sampler{}
	done := make(chan struct{})
	go func() { defer close(done); s.run(sctx, w) }()
	defer func() { stop(); <-done }()

	var last time.Time
	round := 0
	for i := range faults {
		if err := in.waitReplicas(ctx); err != nil {
			return r, fmt.Errorf("waiting for the controller's replicas before fault %d: %w", i+1, err)
		}
		// The work is asked in full before the fault: a frozen replica's webhook would hang the asking. A workload
		// whose controller is quick to act asks all of it at once (sizerWork), so that work is left to land on.
		// A round whose work was all done before the fault's moment (the harness's timing, not the product's) is
		// asked again, as a new round, twice at most; a fault that still lands late fails the run (lateFaults).
		var left, total int
		for attempt := range lateRetries + 1 {
			round++
			if err := askUntilTaken(ctx, w, round); err != nil {
				return r, fmt.Errorf("before fault %d: %w", i+1, err)
			}
			var err error
			if left, total, err = midWork(ctx, w, time.Duration(rng.Int64N(int64(w.maxHold())))); err != nil {
				return r, fmt.Errorf("before fault %d: %w", i+1, err)
			}
			if left > 0 {
				break
			}
			if attempt < lateRetries {
				if err := pollUntil(ctx, 10*time.Minute, func() (bool, error) { return w.converged(ctx) }); err != nil {
					return r, fmt.Errorf("round %d before fault %d: %w", round, i+1, err)
				}
			}
		}
		fault := faultCycle[i%len(faultCycle)]
		// A frozen leader is asked for a new round while it sleeps: whatever it had planned is stale when it wakes.
		askWhileFrozen := func(ctx context.Context) error {
			round++
			return askUntilTaken(ctx, w, round)
		}
		start, handover, err := in.inject(ctx, fault, askWhileFrozen)
		if err != nil {
			return r, fmt.Errorf("fault %d: %w", i+1, err)
		}
		last = start
		r.Faults = append(r.Faults, FaultResult{Fault: fault, Handover: handover, WorkLeft: left, WorkAsked: total})
		fmt.Printf("chaos: %s: fault %d/%d (%s) with %d of %d units of work left, new leader after %.1fs\n", r.Scenario,
			i+1, faults, fault, left, total, handover.Seconds())
	}
	if err := pollUntil(ctx, 10*time.Minute, func() (bool, error) { return w.converged(ctx) }); err != nil {
		return r, fmt.Errorf("no convergence after the last fault: %w", err)
	}
	r.Recovery = time.Since(last)
	// Sampling goes on for a while after convergence: a stale write lands late, if at all.
	if err := in.holdFor(ctx, afterWatch); err != nil {
		return r, err
	}
	stop()
	<-done
	s.sample(ctx, w)
	r.Samples, r.Violations, r.Examples, r.ReadErrors = s.samples, s.violations, s.examples, s.errors
	if j, ok := w.(interface{ judged() (int, int) }); ok {
		if events, violations := j.judged(); events > 0 {
			r.Samples, r.Violations = events, violations // every event judged, and what the lists found beside them
		}
	}
	r.Duration = time.Since(began)
	if s.errors*10 > s.samples+s.errors {
		return r, fmt.Errorf("%d of %d reads of the invariant failed (last: %w)", s.errors, s.samples+s.errors, s.err)
	}
	return r, nil
}

// askUntilTaken asks w for round's work, again until the apiserver takes it (a minute at most), as a user's client
// would: a frozen replica may still be behind its webhooks' Service, where a call times out, and a call sent on a
// connection to a replica that just exited fails. What such faults cost admission calls is the replica scenario's
// to count; here the invariant is judged.
func askUntilTaken(ctx context.Context, w workload, round int) error {
	var last error
	err := pollUntil(ctx, time.Minute, func() (bool, error) {
		last = w.change(ctx, round)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("asking for round %d: %w", round, errors.Join(err, last))
	}
	return nil
}

// midWork waits for the moment a fault should land: hold after the work began to be asked, or sooner, once no more
// than a quarter of the work is left (after some was seen left: the round may not be asked yet), so that the fault
// lands while the controller still has writes to make. It returns the work left then (read just before the fault)
// and all of it.
func midWork(ctx context.Context, w workload, hold time.Duration) (left, total int, err error) {
	deadline := time.Now().Add(hold)
	seen := false
	for {
		left, total, err = w.left(ctx)
		seen = seen || left > 0
		if err != nil || time.Now().After(deadline) || (seen && left*4 <= total) {
			return left, total, err
		}
		select {
		case <-ctx.Done():
			return left, total, ctx.Err()
		case <-time.After(workPoll):
		}
	}
}

// workPoll is how often midWork reads the work left.
const workPoll = 20 * time.Millisecond

// lateRetries is how many more rounds a fault is given when the work of one was done before its moment.
const lateRetries = 2

// lateFaults names the faults of a run that landed once the round's work was done.
func (r Result) lateFaults() []string {
	var out []string
	for i, f := range r.Faults {
		if f.WorkLeft == 0 {
			out = append(out, fmt.Sprintf("%s: fault %d (%s) landed after the round's %d units of work were done",
				r.Scenario, i+1, f.Fault, f.WorkAsked))
		}
	}
	return out
}

// afterWatch is how long the invariant is still sampled once everything converged after the last fault.
const afterWatch = 15 * time.Second
