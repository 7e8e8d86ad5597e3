package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		Faults: []FaultResult{{Fault: FaultKill, Handover: 16 * time.Second, WorkLeft: 40, WorkAsked: 200},
			{Fault: FaultDelete, Handover: 2 * time.Second, WorkLeft: 180, WorkAsked: 200},
			{Fault: FaultStop, Handover: 17 * time.Second, WorkLeft: 100, WorkAsked: 200}},
		Recovery: 41 * time.Second}
	got := faultsSection([]Result{r}, 7)
	for _, want := range []string{"seed 7", "| daemonset: leader death | 1 DaemonSet on 200 nodes | 1 sigstop, 1 sigkill, 1 delete | 812 | 1 | 40/200, 180/200, 100/200 | sigstop 17.0 s, 17.0 s; sigkill 16.0 s, 16.0 s; delete 2.0 s, 2.0 s | 41.0 s |",
		"Broken: node n-1 runs 2 live pods."} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
}

// The admission table splits the failed calls by the fault they followed.
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
	for _, want := range []string{"seed 3", "| etcd | 2 | 5.0 s, 5.0 s | 0.0 s, 0.0 s | 2.0 s, 2.0 s |", "| kube-apiserver | 1 | 6.0 s, 6.0 s | 0.0 s, 0.0 s | 3.0 s, 3.0 s |",
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

// A controller's restart is excused only by the fault it followed, and only when it lost its lease there: the
// container's log says so, the outage could cost a lease, and it stopped in the fault's window. A plain crash during
// a long outage, a restart whose cause no log shows, and a long outage elsewhere in the run excuse nothing; a restart
// before the first fault has none to excuse it. A workload never sampled always fails.
func TestRestartFailures(t *testing.T) {
	samples := map[string]int{"daemonset-controller": 3, "workload-sizer": 3, "pipeline-controller": 3}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	fault := func(outage time.Duration, causes ...RestartCause) RestartFault {
		return RestartFault{Process: "etcd", Outage: outage, Start: at, Ready: at.Add(outage),
			ControllerRestarts: map[string]int32{"workload-sizer": int32(len(causes))},
			Causes:             map[string][]RestartCause{"workload-sizer": causes}}
	}
	lost := RestartCause{Pod: "sizer-a", ExitCode: 1, FinishedAt: at.Add(12 * time.Second), LeaseLost: true}
	crash := RestartCause{Pod: "sizer-a", ExitCode: 2, Reason: "Error", FinishedAt: at.Add(12 * time.Second)}
	late := lost
	late.FinishedAt = at.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		faults []RestartFault
		want   string // "" for no failure
	}{
		{"a lease lost in a 14 s outage", []RestartFault{fault(14*time.Second, lost)}, ""},
		{"a lease lost in a 5 s outage", []RestartFault{fault(5*time.Second, lost)}, "too short to cost a lease"},
		{"a crash during a 14 s outage", []RestartFault{fault(14*time.Second, crash)}, "exit 2 (Error) without losing its lease"},
		{"a lease lost an hour after the fault", []RestartFault{fault(14*time.Second, late)}, "outside the fault's window"},
		{"a lease lost, then a start while the apiserver was down", []RestartFault{fault(14*time.Second, lost,
			RestartCause{Pod: "sizer-a", Unread: true})}, "whose cause no log shows"},
		{"a crash, then a start that could not reach the apiserver", []RestartFault{fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(5 * time.Second), FinishedAt: at.Add(6 * time.Second),
				Unreachable: true}, RestartCause{Pod: "sizer-a", Unread: true})}, "whose cause no log shows"},
		{"a start that could not reach the apiserver in the outage", []RestartFault{fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(3 * time.Second), FinishedAt: at.Add(8 * time.Second),
				Unreachable: true})}, ""},
		{"a start in the outage whose request hung until after the window", []RestartFault{fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(12 * time.Second), FinishedAt: at.Add(36 * time.Second),
				Unreachable: true})}, ""},
		{"a start before the apiserver was back through its Service", []RestartFault{reachableAt(fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(33 * time.Second), FinishedAt: at.Add(34 * time.Second),
				Unreachable: true}), at.Add(40*time.Second))}, ""},
		{"a start well after the apiserver was back through its Service", []RestartFault{reachableAt(fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(55 * time.Second), FinishedAt: at.Add(56 * time.Second),
				Unreachable: true}), at.Add(40*time.Second))}, "outside the fault's window"},
		{"a start after the window that could not reach the apiserver", []RestartFault{fault(14*time.Second,
			RestartCause{Pod: "sizer-a", ExitCode: 1, StartedAt: at.Add(time.Hour), FinishedAt: at.Add(time.Hour + time.Second),
				Unreachable: true})}, "could not reach the apiserver in a start at"},
		{"a restart no log shows, of a pod the fault explains nothing of", []RestartFault{fault(14*time.Second, lost,
			RestartCause{Pod: "sizer-b", Unread: true})}, "whose cause no log shows"},
		{"a long outage excuses no restart after a short one", []RestartFault{fault(14*time.Second, lost), fault(5*time.Second, lost)},
			"after restart 2"},
		{"a restart without a cause read", []RestartFault{{Process: "etcd", Outage: 14 * time.Second, Start: at, Ready: at,
			ControllerRestarts: map[string]int32{"workload-sizer": 1}}}, "no reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RestartResult{Faults: tc.faults, SamplesOf: samples}.failures()
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("failures %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Fatalf("failures %q, want one saying %q", got, tc.want)
			}
		})
	}
	early := RestartResult{Faults: []RestartFault{fault(14*time.Second, lost)}, SamplesOf: samples,
		ControllerRestarts: map[string]int32{"workload-sizer": 2}}
	if got := early.failures(); len(got) != 1 || !strings.Contains(got[0], "workload-sizer restarted 1 times outside every fault's window") {
		t.Errorf("a restart before any fault: failures %q", got)
	}
	r := RestartResult{SamplesOf: map[string]int{"daemonset-controller": 3}}
	if got := r.failures(); len(got) != 2 {
		t.Errorf("two workloads never sampled: %v", got)
	}
}

// Each results file records the commit it was made at, the page's top lists every file's commit and date, and the
// note of behaviour changes the figures predate stays until every scenario has run again.
func TestResultsRecordTheirCommit(t *testing.T) {
	dir := t.TempDir()
	page := "# Reliability\n\n" + staleMarkers.begin + "\n- a change\n" + staleMarkers.end + "\n"
	if err := os.WriteFile(filepath.Join(dir, "reliability.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeResults(dir, outcome{down: &WebhooksDownResult{}}, 7); err != nil {
		t.Fatal(err)
	}
	var r resultFile
	b, err := os.ReadFile(filepath.Join(dir, "reliability", "webhooks-down.json"))
	if err != nil || json.Unmarshal(b, &r) != nil || r.Commit == "" || r.When.IsZero() || r.Seed != 7 {
		t.Fatalf("webhooks-down.json: %s (%v)", b, err)
	}
	doc, _ := os.ReadFile(filepath.Join(dir, "reliability.md"))
	for _, want := range []string{"| [webhooks-down.json](reliability/webhooks-down.json) | `" + r.Commit + "` |", "- a change"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the page lacks %q:\n%s", want, doc)
		}
	}
	full := outcome{leaderDeath: []Result{{}}, admission: []AdmissionResult{{}}, down: &WebhooksDownResult{},
		restarts: &RestartResult{}, flapping: &FlappingResult{}, soak: &SoakResult{}}
	if err := writeResults(dir, full, 8); err != nil {
		t.Fatal(err)
	}
	doc, _ = os.ReadFile(filepath.Join(dir, "reliability.md"))
	if strings.Contains(string(doc), "- a change") {
		t.Error("a run of every scenario kept the note of changes its figures predate")
	}
}

// A start that failed on the apiserver's discovery while it restarted is the fault's doing; a setup failure for any
// other reason is not.
func TestUnreachableStart(t *testing.T) {
	tlsLine := `{"level":"error","msg":"Unable to set up the manager","error":"creating the manager: failed to get server groups: ` +
		`Get \"https://10.96.0.1:443/api\": tls: failed to verify certificate: x509: cannot validate certificate"}`
	if !unreachable(tlsLine) {
		t.Error("a discovery failure during the apiserver's restart was not read as unreachable")
	}
	if unreachable(`{"level":"error","msg":"Unable to set up the manager","error":"invalid flags"}`) {
		t.Error("a setup failure of the binary's own was read as the apiserver's")
	}
	waited := `{"level":"info","msg":"Waiting for the apiserver","error":"dial tcp 10.96.0.1:443: connect: connection refused"}` +
		"\n" + `{"level":"error","msg":"Unable to set up the manager","error":"registering the webhooks: forbidden"}`
	if unreachable(setupFailure(waited)) {
		t.Error("a setup failure after a wait for the apiserver was read as the apiserver's by the wait's own line")
	}
	if !unreachable(setupFailure("Waiting for the apiserver\n" + tlsLine)) {
		t.Error("the setup failure line was not found among the lines")
	}
}

// reachableAt is f with the apiserver answering through its Service again at t.
func reachableAt(f RestartFault, t time.Time) RestartFault {
	f.Reachable = t
	return f
}
