package main

import (
	"strings"
	"testing"
	"time"
)

// The section replaces only what lies between its markers, and is appended when the document has none.
func TestReplaceSection(t *testing.T) {
	doc := "# Reliability\n\n## Bad input\n\ntable\n"
	once := replaceSection(doc, faultsMarkers, "## Faults\n\nv1\n")
	if !strings.HasPrefix(once, doc) || !strings.Contains(once, faultsMarkers.begin+"\n## Faults\n\nv1\n"+faultsMarkers.end) {
		t.Fatalf("appended section:\n%s", once)
	}
	twice := replaceSection(once+"\n## After\n", faultsMarkers, "## Faults\n\nv2\n")
	if strings.Contains(twice, "v1") || !strings.Contains(twice, "v2") || !strings.Contains(twice, "## Bad input") ||
		!strings.Contains(twice, "## After") || strings.Count(twice, faultsMarkers.begin) != 1 {
		t.Fatalf("replaced section:\n%s", twice)
	}
	// Another section's markers leave this one alone.
	both := replaceSection(twice, admissionMarkers, "## Admission\n")
	if !strings.Contains(both, "v2") || !strings.Contains(both, admissionMarkers.begin+"\n## Admission\n"+admissionMarkers.end) {
		t.Fatalf("two sections:\n%s", both)
	}
}

// The table gives every scenario's counts, handovers and recovery; a broken invariant is quoted.
func TestFaultsSection(t *testing.T) {
	r := Result{Scenario: "daemonset: leader death", Controller: "daemonset-controller", Size: "1 DaemonSet on 200 nodes",
		Invariant: "no node runs two pods", Samples: 812, Violations: 1, Examples: []string{"node n-1 runs 2 live pods"},
		Faults:   []FaultResult{{FaultKill, 16 * time.Second}, {FaultDelete, 2 * time.Second}, {FaultStop, 17 * time.Second}},
		Recovery: 41 * time.Second}
	got := faultsSection([]Result{r}, 7)
	for _, want := range []string{"seed 7", "| daemonset: leader death | 1 DaemonSet on 200 nodes | 1 sigstop, 1 sigkill, 1 delete | 812 | 1 | sigstop 17.0 s, 17.0 s; sigkill 16.0 s, 16.0 s; delete 2.0 s, 2.0 s | 41.0 s |",
		"Broken: node n-1 runs 2 live pods."} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
}

// The admission table splits the failed calls by the fault they followed; only those after a deletion or before
// any fault fail a run.
func TestAdmissionSection(t *testing.T) {
	r := AdmissionResult{Scenario: "pipeline-controller: admission while a replica dies", Calls: 700,
		Faults:  []Fault{FaultDelete, FaultKill, FaultStop},
		Failed:  map[string]int{"connection refused": 2, "timed out": 4},
		ByFault: map[string]int{string(FaultKill): 2, string(FaultStop): 4}}
	got := admissionSection([]AdmissionResult{r}, 9)
	want := "| pipeline-controller: admission while a replica dies | 1 delete, 1 sigkill, 1 sigstop | 700 | 6 (2 connection refused, 4 timed out) | 0 | 2 | 4 |"
	if !strings.Contains(got, want) || !strings.Contains(got, "seed 9") {
		t.Errorf("section lacks %q:\n%s", want, got)
	}
	if n := r.gatedFailures(); n != 0 {
		t.Errorf("a crash's and a freeze's failures gate the run: %d", n)
	}
	r.ByFault[string(FaultDelete)], r.ByFault["none"] = 1, 1
	if n := r.gatedFailures(); n != 2 {
		t.Errorf("failures after a deletion or before any fault: %d gated, want 2", n)
	}
}

// Every check is a row; a failed one stands out, and a pipe in what was seen does not break the table.
func TestWebhooksDownSection(t *testing.T) {
	r := WebhooksDownResult{Checks: []Check{{Name: "a create is refused", Passed: true, Seen: "a | b"},
		{Name: "a finalizer goes", Passed: false, Seen: "still there"}}}
	got := webhooksDownSection(r)
	for _, want := range []string{"| a create is refused | yes | a \\| b |", "| a finalizer goes | **no** | still there |"} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	if r.failed() != 1 {
		t.Errorf("failed() = %d, want 1", r.failed())
	}
}

// The restart figures give each process's outages and convergence times, and each controller's own restarts and
// writes.
func TestRestartsSection(t *testing.T) {
	r := RestartResult{Samples: 300, Faults: []RestartFault{{Process: "etcd", Outage: 4 * time.Second, Converged: 2 * time.Second},
		{Process: "kube-apiserver", Outage: 6 * time.Second, Converged: 3 * time.Second},
		{Process: "etcd", Outage: 5 * time.Second, Converged: 1 * time.Second}},
		ControllerRestarts: map[string]int32{"workload-sizer": 1}, Writes: map[string]int{"pipeline-controller": 40},
		Refused: map[string]int{"pipeline-controller": 2}}
	got := restartsSection(r, 3)
	for _, want := range []string{"seed 3", "| etcd | 2 | 5.0 s, 5.0 s | 2.0 s, 2.0 s |", "| kube-apiserver | 1 | 6.0 s, 6.0 s | 3.0 s, 3.0 s |",
		"| workload-sizer | 1 | 0 | 0 |", "| pipeline-controller | 0 | 40 | 2 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
}

// A controller's writes are told by its ServiceAccount; nobody else's count.
func TestControllerOf(t *testing.T) {
	for user, want := range map[string]string{
		"system:serviceaccount:keelson-system:keelson-workload-sizer":       "workload-sizer",
		"system:serviceaccount:keelson-system:keelson-daemonset-controller": "daemonset-controller",
		"system:kube-controller-manager":                                    "",
		"system:serviceaccount:kube-system:daemon-set-controller":           "",
	} {
		if got := controllerOf(user); got != want {
			t.Errorf("controllerOf(%q) = %q, want %q", user, got, want)
		}
	}
}

// A controller's restarts fail the run only when the restart that caused them had an outage too short to cost its
// leader the lease: a long outage elsewhere in the run excuses nothing. A workload never sampled always fails.
func TestRestartFailures(t *testing.T) {
	samples := map[string]int{"daemonset-controller": 3, "workload-sizer": 3, "pipeline-controller": 3}
	short := RestartFault{Process: "etcd", Outage: 5 * time.Second, ControllerRestarts: map[string]int32{"workload-sizer": 1}}
	long := RestartFault{Process: "kube-apiserver", Outage: 14 * time.Second, ControllerRestarts: map[string]int32{"workload-sizer": 1}}
	quiet := RestartFault{Process: "etcd", Outage: 5 * time.Second, ControllerRestarts: map[string]int32{}}
	r := RestartResult{Faults: []RestartFault{short}, SamplesOf: samples}
	if got := r.failures(); len(got) != 1 || !strings.Contains(got[0], "workload-sizer restarted 1 times after restart 1") {
		t.Errorf("a restart after a 5 s outage: %v", got)
	}
	r.Faults = []RestartFault{long, quiet}
	if got := r.failures(); len(got) != 0 {
		t.Errorf("a restart after a 14 s outage (the lease was lost by design): %v", got)
	}
	r.Faults = []RestartFault{long, short}
	if got := r.failures(); len(got) != 1 || !strings.Contains(got[0], "after restart 2") {
		t.Errorf("a long outage excused the restart after a short one: %v", got)
	}
	r.Faults, r.SamplesOf = []RestartFault{quiet}, map[string]int{"daemonset-controller": 3}
	if got := r.failures(); len(got) != 2 {
		t.Errorf("two workloads never sampled: %v", got)
	}
}
