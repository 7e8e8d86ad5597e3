# Helpers for the suites' scripts (POSIX sh: chainsaw runs scripts with sh -c). Chainsaw runs each script with KUBECONFIG pointing at the cluster under
# test and NAMESPACE set to the test's namespace.

# eventually DESCRIPTION TIMEOUT_SECONDS COMMAND...: run COMMAND every half second until it succeeds; fail with
# DESCRIPTION and COMMAND's last output when TIMEOUT_SECONDS pass. Polling with a deadline, never a fixed sleep.
eventually() {
  local what="$1" timeout="$2" deadline out
  shift 2
  deadline=$(($(date +%s) + timeout))
  until out=$("$@" 2>&1); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "FAILED after ${timeout}s: $what" >&2
      echo "$out" >&2
      return 1
    fi
    sleep 0.5
  done
}

# fake_node NAME [LABEL=VALUE...]: a simulated node that kwok runs (its annotation), tainted like every simulated
# node so that only pods that tolerate kwok.x-k8s.io/node land there.
fake_node() {
  local name="$1" labels="" l
  shift
  for l in "$@"; do labels="$labels    ${l%%=*}: \"${l#*=}\"
"; done
  kubectl apply -f - <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
$labels
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
YAML
}

# node_ready NAME: the node's Ready condition is True.
node_ready() {
  [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# release_objects: every object of the release ($KEELSON_RELEASE), cluster-scoped or in its namespace, as sorted
# kind.group/name lines. CRDs are left out: they are kept on purpose.
release_objects() {
  local types
  types=$(kubectl api-resources --verbs=list -o name | grep -v -e '^events' -e '^customresourcedefinitions' | paste -sd, -)
  kubectl get "$types" -n "$KEELSON_NAMESPACE" -l "app.kubernetes.io/instance=$KEELSON_RELEASE" -o name 2>/dev/null | sort
}

# helm_release ARGS...: helm upgrade --install the chart under test with the images under test, and wait.
helm_release() {
  # shellcheck disable=SC2086 # KEELSON_VALUES holds several flags
  helm upgrade --install "$KEELSON_RELEASE" "$KEELSON_CHART" -n "$KEELSON_NAMESPACE" --create-namespace $KEELSON_VALUES \
    --wait --timeout 5m "$@"
}
