package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	"github.com/keelson-dev/keelson/tools/internal/audit"
)

// settleQuiet is how long the measured controllers must have written nothing before the idle window opens: the
// trailing status writes of the last convergence belong to that convergence, not to steady state. It is longer than
// the controllers' event series write-back (controllers/internal/recorder): a series repeated after its last write
// is written back by a flush that runs once a minute, on series not written for a minute, so up to two minutes
// after the write before it; that write-back is the tail of the work too.
const settleQuiet = 130 * time.Second

// lastWriteBy returns when the newest write by any of users happened (zero when none did).
func lastWriteBy(events []audit.WriteEvent, users map[string]bool) time.Time {
	var last time.Time
	for _, e := range events {
		if users[e.User] && e.At.After(last) {
			last = e.At
		}
	}
	return last
}

// auditTail reads what the apiserver appends to its audit log from the moment it is opened: the log holds the whole
// run (hundreds of MB at N = 1000), too much to read again on every poll.
type auditTail struct {
	path    string
	offset  int64
	partial []byte
}

// newAuditTail starts at the log's current end.
func newAuditTail(path string) (*auditTail, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("the audit log (the local cluster writes it): %w", err)
	}
	return &auditTail{path: path, offset: fi.Size()}, nil
}

// next returns the writes completed in the lines appended since the last call. A log that shrank was rotated: it
// is read again from its start.
func (t *auditTail) next() ([]audit.WriteEvent, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < t.offset {
		t.offset, t.partial = 0, nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	cut := bytes.LastIndexByte(data, '\n') + 1 // whole lines now; the rest comes with the next read
	t.partial = append([]byte(nil), data[cut:]...)
	return audit.ReadWrites(bytes.NewReader(data[:cut]))
}

// settle waits, up to deadline, until none of users has written to the audit log for quiet, and returns how long
// it waited. A cluster that never goes quiet fails the run: its idle window would measure the tail of the work.
func settle(ctx context.Context, auditLog string, users map[string]string, quiet, deadline time.Duration) (time.Duration, error) {
	who := map[string]bool{}
	for _, u := range users {
		who[u] = true
	}
	tail, err := newAuditTail(auditLog)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	last := start // writes just before the tail began are not seen: wait a whole quiet period regardless
	err = poll(ctx, deadline, func() (bool, error) {
		events, err := tail.next()
		if err != nil {
			return false, err
		}
		if l := lastWriteBy(events, who); l.After(last) {
			last = l
		}
		return time.Since(last) >= quiet, nil
	})
	if err != nil {
		return time.Since(start), fmt.Errorf("the controllers did not stop writing for %s within %s: %w", quiet, deadline, err)
	}
	return time.Since(start), nil
}

// daemonSetSettled says whether a DaemonSet of either kind has every desired pod updated and available, and no
// other pod left: pods on nodes the pool just lost are still being deleted, by the same controller the next trial
// measures, after the status already counts only the nodes that remain.
func daemonSetSettled(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	var desired, current int32
	var selector *metav1.LabelSelector
	switch d := obj.(type) {
	case *daemonsetv1alpha1.DaemonSet:
		desired, current, selector = d.Status.DesiredNumberScheduled, d.Status.CurrentNumberScheduled, d.Spec.Selector
	case *appsv1.DaemonSet:
		desired, current, selector = d.Status.DesiredNumberScheduled, d.Status.CurrentNumberScheduled, d.Spec.Selector
	}
	if !converged(obj, desired) || current != desired {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false, err
	}
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, &pods, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, err
	}
	return int32(len(pods.Items)) == desired, nil
}

// allSettled says whether every DaemonSet of both kinds outside the benchmarks' namespaces is settled.
func allSettled(ctx context.Context, c client.Client, keelson []daemonsetv1alpha1.DaemonSet, builtin []appsv1.DaemonSet) (bool, error) {
	var others []client.Object
	for i := range keelson {
		others = append(others, &keelson[i])
	}
	for i := range builtin {
		others = append(others, &builtin[i])
	}
	for _, d := range others {
		if strings.HasPrefix(d.GetNamespace(), "bench-") {
			continue
		}
		if ok, err := daemonSetSettled(ctx, c, d); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// othersSettled waits until every DaemonSet the benchmarks did not make (make dev's sample runs on every node,
// the simulated ones too) has caught up with the resized pool and stayed so for three seconds: their pod
// creations would otherwise land in the next trial's window, and compete with it.
func othersSettled(ctx context.Context, c client.Client) error {
	var since time.Time
	return poll(ctx, 10*time.Minute, func() (bool, error) {
		var keelson daemonsetv1alpha1.DaemonSetList
		var builtin appsv1.DaemonSetList
		if err := c.List(ctx, &keelson); err != nil {
			return false, err
		}
		if err := c.List(ctx, &builtin); err != nil {
			return false, err
		}
		settled, err := allSettled(ctx, c, keelson.Items, builtin.Items)
		if err != nil {
			return false, err
		}
		switch {
		case !settled:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		}
		return settled && time.Since(since) >= 3*time.Second, nil
	})
}
