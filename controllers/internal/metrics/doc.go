// Package metrics is the one scheme by which Keelson's controllers export what they know: every metric is named
// keelson_<kind>_<what> (kind is daemonset, workloadsizer or pipeline), registered into controller-runtime's
// registry (served on the manager's /metrics), and labelled only by words from a small fixed set (condition types,
// statuses, reasons, phases), never by a pod, node or object name, so a cluster's size never multiplies the series.
//
// Two sorts of metric:
//
//   - State: how many objects of the kind stand in each condition, and sums of their status counters. A Collector
//     computes these from the informer cache at scrape time, as kube-state-metrics does, rather than the reconciler
//     keeping gauges up to date: a gauge set in reconcile must be forgotten on delete, goes stale when an object
//     stops being reconciled, and starts wrong on a new leader until every object has been through a pass; a read of
//     the cache is always the current state and costs one list of memory per scrape. Only the leader reports them:
//     followers hold the same caches (warmup) and would report every object once per replica.
//   - Events: counters and histograms of things that happen (a rollout completing, a conflict starting), observed
//     by the reconciler at the moment its status write records the transition.
//
// docs/operations.md lists every metric; a process test scrapes the binaries and checks each one is there.
package metrics
