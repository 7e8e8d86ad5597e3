package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/keelson-dev/keelson/tools/internal/audit"
)

// RestartResult is the control-plane restart scenario's run: etcd and the apiserver restarted in turn while the
// three controllers work, each controller's invariant sampled throughout.
type RestartResult struct {
	Faults []RestartFault `json:"faults"`
	// ControllerRestarts is how many times each controller's containers restarted during the run: a controller
	// rides a short outage out by reconnecting; a leader that could not renew its lease for the renew deadline
	// exits, and its standby leads.
	ControllerRestarts map[string]int32 `json:"controllerRestarts"`
	// Samples and Violations add up every workload's invariant checks; ReadErrors are the reads that failed (the
	// apiserver is down during each fault: they are expected).
	Samples    int `json:"samples"`
	Violations int `json:"violations"`
	ReadErrors int `json:"readErrors"`
	// SamplesOf is each controller's share of Samples: a workload whose check never read anything proves nothing.
	SamplesOf map[string]int `json:"samplesOf"`
	Examples  []string       `json:"examples,omitempty"`
	// Writes is what each controller wrote from each fault until everything converged, summed; Refused the part
	// the apiserver refused (a conflict, an object already there: a write repeated on a stale view).
	Writes  map[string]int `json:"writes"`
	Refused map[string]int `json:"refused"`
}

// RestartFault is one restart.
type RestartFault struct {
	Process string `json:"process"`
	// Outage runs from the stop until the apiserver was ready again; Converged from then until every workload
	// converged.
	Outage    time.Duration `json:"outage"`
	Converged time.Duration `json:"converged"`
	// ControllerRestarts is each controller's container restarts this restart caused: counted once every replica
	// is back, before the next restart; Causes says why each of those containers stopped.
	ControllerRestarts map[string]int32          `json:"controllerRestarts"`
	Causes             map[string][]RestartCause `json:"causes,omitempty"`
	// Start is when the process was stopped, Ready when the apiserver was ready again; Reachable when it answered
	// again through the kubernetes Service, as the pods reach it: an apiserver that stops empties the Service's
	// endpoint, and a restarted one's endpoint reaches the pods only once kube-proxy has seen it again, which can be
	// many seconds after the apiserver itself is ready.
	Start     time.Time `json:"start"`
	Ready     time.Time `json:"ready"`
	Reachable time.Time `json:"reachable,omitzero"`
}

// restartProcesses are restarted in turn.
var restartProcesses = []string{"etcd", "kube-apiserver"}

// restartDown is how long a restarted process stays stopped.
const restartDown = 2 * time.Second

// controlPlaneRestarts runs the scenario: the three workloads set up side by side, then faults restarts, each a
// moment after asking every workload for work, each once the last converged.
func controlPlaneRestarts(ctx context.Context, c client.Client, cs kubernetes.Interface, in map[string]*injector,
	work map[string]workload, reach func(context.Context) error, auditLog string, faults int, rng *rand.Rand) (RestartResult, error) {
	r := RestartResult{ControllerRestarts: map[string]int32{}, Writes: map[string]int{}, Refused: map[string]int{},
		SamplesOf: map[string]int{}}
	// Restarts are counted from before the setup: one there, or before the first fault, has no fault to explain it,
	// and fails the run (failures).
	before, err := controllerRestarts(ctx, c, in)
	if err != nil {
		return r, err
	}
	_, countedPods, err := restartCauses(ctx, c, cs, in, nil)
	if err != nil {
		return r, err
	}
	if err := setUpAll(ctx, work); err != nil {
		return r, err
	}
	samplers, stopSampling := startSamplers(ctx, work)
	defer stopSampling()

	began := time.Now()
	var windows [][2]time.Time
	tally := &restartTally{c: c, cs: cs, in: in, counted: before, countedPods: countedPods}
	for i := range faults {
		if err := tally.next(ctx, &r); err != nil {
			return r, fmt.Errorf("before fault %d: %w", i+1, err)
		}
		for _, name := range controllers {
			// Asked again while it fails: a leader that lost its lease in the last outage may exit just now, and
			// its webhook with it (the admission scenario measures that; this one does not).
			if err := askUntilTaken(ctx, work[name], i+1); err != nil {
				return r, fmt.Errorf("%s, before fault %d: %w", name, i+1, err)
			}
		}
		if err := in[controllers[0]].holdFor(ctx, time.Duration(500+rng.IntN(2500))*time.Millisecond); err != nil {
			return r, err
		}
		process := restartProcesses[i%len(restartProcesses)]
		start := time.Now()
		if err := restartProcess(ctx, in[controllers[0]], process); err != nil {
			return r, err
		}
		ready := time.Now()
		if err := pollUntil(ctx, 2*time.Minute, func() (bool, error) { return reach(ctx) == nil, nil }); err != nil {
			return r, fmt.Errorf("the apiserver not reachable through its Service after restarting %s: %w", process, err)
		}
		reachable := time.Now()
		if err := pollUntil(ctx, 10*time.Minute, func() (bool, error) { return allConverged(ctx, work), nil }); err != nil {
			return r, fmt.Errorf("no convergence after restarting %s: %w", process, err)
		}
		f := RestartFault{Process: process, Outage: ready.Sub(start), Converged: time.Since(ready), Start: start, Ready: ready,
			Reachable: reachable}
		r.Faults = append(r.Faults, f)
		windows = append(windows, [2]time.Time{start, time.Now()})
		fmt.Printf("chaos: control-plane restart %d/%d (%s): apiserver ready after %s (through its Service %s later), "+
			"everything converged %s later\n", i+1, faults, process, seconds(f.Outage), seconds(reachable.Sub(ready)),
			seconds(f.Converged))
	}
	// Sampling goes on for a while after the last convergence: a stale write lands late, if at all.
	if err := in[controllers[0]].holdFor(ctx, afterWatch); err != nil {
		return r, err
	}
	if err := tally.next(ctx, &r); err != nil {
		return r, fmt.Errorf("after the last fault: %w", err)
	}
	stopSampling()
	for _, name := range controllers {
		s := samplers[name]
		s.sample(ctx, work[name])
		r.Samples, r.Violations, r.ReadErrors = r.Samples+s.samples, r.Violations+s.violations, r.ReadErrors+s.errors
		r.SamplesOf[name] = s.samples
		for _, e := range s.examples {
			r.Examples = append(r.Examples, name+": "+e)
		}
	}
	after, err := controllerRestarts(ctx, c, in)
	if err != nil {
		return r, err
	}
	for _, name := range controllers {
		r.ControllerRestarts[name] = after[name] - before[name]
	}
	err = r.countWrites(auditLog, began, windows)
	return r, err
}

// restartTally counts the controllers' container restarts fault by fault: the restarts since the last count, and
// why each container stopped, are the last fault's.
type restartTally struct {
	c           client.Client
	cs          kubernetes.Interface
	in          map[string]*injector
	counted     map[string]int32
	countedPods map[string]int32
}

// next gives r's last fault the restarts since the last count, once every replica is back.
func (t *restartTally) next(ctx context.Context, r *RestartResult) error {
	for _, name := range controllers {
		if err := t.in[name].waitReplicas(ctx); err != nil {
			return fmt.Errorf("waiting for %s's replicas: %w", name, err)
		}
	}
	now, err := controllerRestarts(ctx, t.c, t.in)
	if err != nil {
		return err
	}
	causes, nowPods, err := restartCauses(ctx, t.c, t.cs, t.in, t.countedPods)
	if err != nil {
		return err
	}
	if n := len(r.Faults); n > 0 {
		r.Faults[n-1].ControllerRestarts = map[string]int32{}
		for _, name := range controllers {
			r.Faults[n-1].ControllerRestarts[name] = now[name] - t.counted[name]
		}
		r.Faults[n-1].Causes = causes
	}
	t.counted, t.countedPods = now, nowPods
	return nil
}

// startSamplers samples every controller's invariant until the returned stop is called: all stop at once, and stop
// returns once they have (it may be called again).
func startSamplers(ctx context.Context, work map[string]workload) (map[string]*sampler, func()) {
	samplers := map[string]*sampler{}
	for _, name := range controllers {
		samplers[name] = &sampler{}
	}
	stop := background(ctx, func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, name := range controllers {
			wg.Go(func() { samplers[name].run(ctx, work[name]) })
		}
		wg.Wait()
	})
	return samplers, stop
}

// setUpAll sets every controller's workload up.
func setUpAll(ctx context.Context, work map[string]workload) error {
	for _, name := range controllers {
		if err := work[name].setUp(ctx); err != nil {
			return fmt.Errorf("setting up the %s workload: %w", name, err)
		}
	}
	return nil
}

// restartProcess restarts one control-plane process with the cluster tool, stopped for restartDown. Interrupted,
// the restart is asked to finish (it starts the process again before it returns), not killed in the middle with the
// process stopped.
func restartProcess(ctx context.Context, in *injector, process string) error {
	cmd := exec.CommandContext(ctx, in.clusterTool, "restart", "--dir", in.clusterDir,
		"--process", process, "--down", restartDown.String())
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Minute
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("restarting %s: %w: %s", process, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// allConverged reports whether every controller's workload converged; a read that fails while the apiserver
// settles is not the scenario's failure, only not yet.
func allConverged(ctx context.Context, work map[string]workload) bool {
	for _, name := range controllers {
		if ok, err := work[name].converged(ctx); !ok || err != nil {
			return false
		}
	}
	return true
}

// countWrites counts, from the audit log since began, each controller's writes in the faults' windows (from each
// stop until everything converged), leases and events left out, and the part refused with a conflict.
func (r *RestartResult) countWrites(auditLog string, began time.Time, windows [][2]time.Time) error {
	events, err := audit.ReadWritesSince(auditLog, began)
	if err != nil {
		return err
	}
	for _, e := range events {
		name := controllerOf(e.User)
		if name == "" || e.Key == "update leases" || e.Key == "create events" || e.Key == "patch events" {
			continue
		}
		for _, w := range windows {
			if !e.At.Before(w[0]) && e.At.Before(w[1]) {
				r.Writes[name]++
				if e.Code == 409 {
					r.Refused[name]++
				}
			}
		}
	}
	return nil
}

// verdict is what a fault makes of one restart cause.
type verdict struct {
	excused bool
	why     string
}

// causesExcused judges each of a controller's restart causes in a fault (restartExcused). A restart whose cause was
// not read excuses nothing, whatever the restarts after it: the kubelet shows only a container's last stop, so the
// earlier stops of a chain (a crash, then a start into the outage) cannot be told from a lease lost. A controller
// rides an outage out with one restart at most: a leader that loses its lease exits, and the container started
// after it waits for the apiserver (cmd/internal/manager's apiserverWait).
func causesExcused(f RestartFault, name string) []verdict {
	causes := f.Causes[name]
	out := make([]verdict, len(causes))
	for i, c := range causes {
		out[i].excused, out[i].why = restartExcused(f, c)
	}
	return out
}

// controllerOf is the controller whose ServiceAccount made a request, or "".
func controllerOf(user string) string {
	for _, name := range controllers {
		if strings.HasPrefix(user, "system:serviceaccount:") && strings.HasSuffix(user, "-"+name) {
			return name
		}
	}
	return ""
}

// renewDeadline is the chart's leaderElection.renewDeadline: a leader that cannot renew its lease for that long
// gives it up and exits. Its last renewal may have come up to a retry period (the chart's leaderElection.retryPeriod,
// 1 s) before the outage began, so an outage from renewDeadline less that period on may cost the lease.
const (
	renewDeadline = 10 * time.Second
	retryPeriod   = 1 * time.Second
)

// failures says what fails the run: a broken invariant, a workload never sampled, and a controller that restarted
// although no outage could have cost it its lease (it should have ridden them out by reconnecting).
func (r RestartResult) failures() []string {
	var out []string
	if r.Violations > 0 {
		out = append(out, fmt.Sprintf("control-plane restarts: %d samples broke an invariant", r.Violations))
	}
	for _, name := range controllers {
		if r.SamplesOf[name] == 0 {
			out = append(out, fmt.Sprintf("control-plane restarts: %s's invariant was never sampled", name))
		}
	}
	// A restart no fault was given (in the setup, before the first fault, or after the last count) has nothing to
	// explain it.
	for _, name := range controllers {
		judged := int32(0)
		for _, f := range r.Faults {
			judged += f.ControllerRestarts[name]
		}
		if n := r.ControllerRestarts[name] - judged; n > 0 {
			out = append(out, fmt.Sprintf("control-plane restarts: %s restarted %d times outside every fault's window "+
				"(in the setup, before the first restart or after the last count), which no fault explains", name, n))
		}
	}
	// Each controller restart is judged against the fault it followed (restartExcused): only a lease lost, or a start
	// that could not reach the apiserver, in that fault's window and an outage long enough to cost a lease, excuses
	// it. A restart whose cause was not read excuses nothing.
	for i, f := range r.Faults {
		for _, name := range controllers {
			n := int(f.ControllerRestarts[name])
			var why []string
			for i, ok := range causesExcused(f, name) {
				if ok.excused {
					n--
				} else {
					why = append(why, f.Causes[name][i].Pod+": "+ok.why)
				}
			}
			if n > 0 {
				out = append(out, fmt.Sprintf("control-plane restarts: %s restarted %d times after restart %d (%s, an outage "+
					"of %s) that the fault does not explain: %s", name, n, i+1, f.Process, seconds(f.Outage),
					orNone(strings.Join(why, "; "))))
			}
		}
	}
	return out
}

// restartExcused says whether a fault explains a controller's restart: the restart lost its lease (its log says
// so), or, restarted meanwhile, could not reach the apiserver to start; the fault's outage was long enough to cost a
// lease; and it happened within the fault's window (from the process's stop until a renew deadline after the
// apiserver was ready again): a lost lease by when the container stopped, a start that could not reach the apiserver
// by when that start began (its first request, sent into the outage, may hang until the client gives up, after the
// apiserver is back). A crash, an OOM kill or any other stop is a failure whatever the fault.
func restartExcused(f RestartFault, cause RestartCause) (bool, string) {
	switch {
	case cause.Unread:
		return false, "a restart whose cause no log shows"
	case !cause.LeaseLost && !cause.Unreachable:
		return false, fmt.Sprintf("exit %d (%s) without losing its lease", cause.ExitCode, orNone(cause.Reason))
	case f.Outage < renewDeadline-retryPeriod:
		return false, fmt.Sprintf("stopped in an outage of %s, too short to cost a lease (%s)", seconds(f.Outage),
			renewDeadline-retryPeriod)
	case cause.LeaseLost && !f.inWindow(cause.FinishedAt):
		return false, fmt.Sprintf("lost its lease at %s, outside the fault's window", cause.FinishedAt.Format(time.RFC3339))
	case !cause.LeaseLost && !f.inWindow(cause.StartedAt):
		return false, fmt.Sprintf("could not reach the apiserver in a start at %s, outside the fault's window",
			cause.StartedAt.Format(time.RFC3339))
	}
	return true, ""
}

// inWindow reports whether t falls in the fault's window: from the process's stop until a renew deadline after the
// apiserver was ready again, as the pods reach it (through its Service: Reachable, when measured).
func (f RestartFault) inWindow(t time.Time) bool {
	back := f.Ready
	if f.Reachable.After(back) {
		back = f.Reachable
	}
	return !f.Start.IsZero() && !t.IsZero() && !t.Before(f.Start) && !t.After(back.Add(renewDeadline))
}

// serviceReadiness returns a check that the apiserver answers /readyz through the kubernetes Service's ClusterIP, the
// way the controllers' pods reach it. The host routes a ClusterIP through kube-proxy's rules as a pod does.
func serviceReadiness(ctx context.Context, c client.Client, cfg *rest.Config) (func(context.Context) error, error) {
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc); err != nil {
		return nil, fmt.Errorf("the kubernetes Service: %w", err)
	}
	if len(svc.Spec.Ports) == 0 {
		return nil, errors.New("the kubernetes Service has no port")
	}
	through := rest.CopyConfig(cfg)
	through.Host = "https://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	through.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(through)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}, nil
}
