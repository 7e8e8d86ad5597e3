#!/bin/sh
# diagnose.sh NAMESPACE: what a failed end-to-end test leaves behind, for whoever reads the log — the test
# namespace's workloads, Keelson objects with their conditions, its recent events, and the controllers' pods,
# leases and last log lines. Chainsaw's catch (e2e/.chainsaw.yaml) runs it when any operation fails; make
# e2e-run prints what it wrote again after the suites, so it is at the end of the log too.
#
# Every command is a look, not a check: one that fails (a kind not installed, a namespace gone) says so and the
# next runs.
set -u
ns="$1"
release="${KEELSON_RELEASE:-keelson}"
system="${KEELSON_NAMESPACE:-keelson-system}"

look() {
  echo "--- $*"
  "$@" 2>&1 || echo "(failed: exit $?)"
}

look kubectl get nodes -o wide
look kubectl -n "$ns" get pods,deployments,replicasets,poddisruptionbudgets,persistentvolumeclaims,services -o wide
look kubectl -n "$ns" get daemonsets.daemonset.keelson.dev,workloadsizers.sizer.keelson.dev,pipelines.inference.keelson.dev \
  -o 'custom-columns=KIND:.kind,NAME:.metadata.name,GENERATION:.metadata.generation,OBSERVED:.status.observedGeneration,CONDITIONS:.status.conditions[*].reason'
look kubectl -n "$ns" get daemonsets.daemonset.keelson.dev,workloadsizers.sizer.keelson.dev,pipelines.inference.keelson.dev \
  -o 'jsonpath={range .items[*]}{.kind} {.metadata.name}{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}'
echo "--- the last 40 events in $ns"
events=$(kubectl -n "$ns" get events --sort-by=.lastTimestamp \
  -o 'custom-columns=LAST:.lastTimestamp,TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message' 2>&1) ||
  echo "(failed)"
printf '%s\n' "$events" | tail -n 40
look kubectl -n "$system" get pods,leases -o wide
for b in daemonset-controller workload-sizer pipeline-controller; do
  # Errors first (the start-up lines are many and rarely the cause), then the very last lines; each cut to 400
  # characters.
  logs=$(kubectl -n "$system" logs -l "app.kubernetes.io/name=$b,app.kubernetes.io/instance=$release" --prefix \
    --tail=300 --max-log-requests=4 2>&1) || echo "(failed)"
  echo "--- $b: the last 12 errors and warnings in its pods' logs"
  printf '%s\n' "$logs" | grep -E '"level":"(error|warn)"' | tail -n 12 | cut -c1-400
  echo "--- $b: the last 6 lines"
  printf '%s\n' "$logs" | tail -n 6 | cut -c1-400
done
