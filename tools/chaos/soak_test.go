package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The slope is fitted over the second half of the run only: a process that grew while filling its caches and then
// stayed flat is flat; one that keeps growing is not.
func TestSeriesOf(t *testing.T) {
	d := time.Hour
	samples := map[string][]processSample{}
	for i := 0; i <= 60; i++ {
		at := time.Duration(i) * time.Minute
		warm := 100.0
		if at < d/2 {
			warm = 50 + float64(i)
		}
		samples["flat"] = append(samples["flat"], processSample{controller: "c", at: at, memoryMiB: warm, goroutines: 100})
		samples["leak"] = append(samples["leak"], processSample{controller: "c", at: at, memoryMiB: 100 + float64(i), goroutines: 100 + 2*float64(i)})
	}
	series := seriesOf(samples, d)
	if len(series) != 2 || series[0].Pod != "flat" || series[1].Pod != "leak" {
		t.Fatalf("series = %+v", series)
	}
	flat, leak := series[0], series[1]
	if math.Abs(flat.MemorySlope) > 1e-6 || !flat.memoryFlat() || !flat.goroutinesFlat() {
		t.Errorf("flat: memory slope %v MiB/h, flat %v/%v", flat.MemorySlope, flat.memoryFlat(), flat.goroutinesFlat())
	}
	if math.Abs(leak.MemorySlope-60) > 1e-6 || leak.memoryFlat() || leak.goroutinesFlat() {
		t.Errorf("leak: memory slope %v MiB/h (want 60), flat %v/%v", leak.MemorySlope, leak.memoryFlat(), leak.goroutinesFlat())
	}
	if f := (SoakResult{Processes: series}).failures(); len(f) != 2 {
		t.Errorf("failures = %q, want the leak's memory and goroutines", f)
	}
}

// A leak of 10 MiB an hour fails the soak even under the collector's sawtooth (±4 MiB around the trend, sampled
// every 20 s over a 30-minute run); the same sawtooth without the leak passes.
func TestSoakCatchesATenMiBAnHourLeak(t *testing.T) {
	d := 30 * time.Minute
	samples := map[string][]processSample{}
	for i := 0; i*int(soakSample) <= int(d); i++ {
		at := time.Duration(i) * soakSample
		saw := float64(i%6)*1.6 - 4 // the collector's sawtooth, -4 to +4 MiB
		samples["leak"] = append(samples["leak"], processSample{controller: "c", at: at,
			memoryMiB: 100 + 10*at.Hours() + saw, goroutines: 150})
		samples["steady"] = append(samples["steady"], processSample{controller: "c", at: at, memoryMiB: 100 + saw, goroutines: 150})
	}
	series := seriesOf(samples, d)
	f := SoakResult{Processes: series}.failures()
	if len(f) != 1 || !strings.Contains(f[0], "leak's memory grew") {
		t.Fatalf("failures = %q, want the leak's memory only (slopes %+.1f and %+.1f MiB/h)", f, series[0].MemorySlope, series[1].MemorySlope)
	}
}

// One sample far off the trend near the end of the window (250 goroutines waiting on the client budget) does not
// make a flat series grow.
func TestSoakSlopeIgnoresOneBurst(t *testing.T) {
	d := 30 * time.Minute
	samples := map[string][]processSample{}
	for i := 0; i*int(soakSample) <= int(d); i++ {
		g := 150.0
		if i == 85 {
			g = 400
		}
		samples["steady"] = append(samples["steady"], processSample{controller: "c", at: time.Duration(i) * soakSample,
			memoryMiB: 100, goroutines: g})
	}
	if f := (SoakResult{Processes: seriesOf(samples, d)}).failures(); len(f) != 0 {
		t.Fatalf("one burst failed a flat run: %q", f)
	}
}
