# shellcheck shell=dash
# Helpers for the suites' scripts (POSIX sh: chainsaw runs scripts with sh -c). Chainsaw runs each script with KUBECONFIG pointing at the cluster under
# test and NAMESPACE set to the test's namespace.
#
# Every script starts with `set -eu` (tools/e2escripts_test.go checks it): without -e only the last command decides
# the step, and a failed check followed by a passing one would pass. sh has no pipefail, so a command whose
# failure matters is never the left side of a pipe: capture its output first, then filter it. Absence is a NotFound
# answer (absent) or a listing that succeeded and named nothing (none), never an error sent to /dev/null.

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

# absent GET_ARGS...: `kubectl get GET_ARGS` answers NotFound. Any other failure (the apiserver unreachable, a
# type unknown, access forbidden) is not absence: it fails, with kubectl's answer on stderr.
absent() {
  local out
  if out=$(kubectl get "$@" -o name 2>&1); then
    echo "still there: $out" >&2
    return 1
  fi
  case "$out" in
    *"(NotFound)"*) return 0 ;;
  esac
  echo "$out" >&2
  return 1
}

# none GET_ARGS...: a listing (`kubectl get GET_ARGS`, e.g. by label) that succeeded and named nothing. A failed
# listing is not "none".
none() {
  local out
  out=$(kubectl get "$@" -o name) || return 1
  [ -z "$out" ] || { echo "still there: $out" >&2; return 1; }
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
# A failed listing fails: it is never taken for "no objects".
release_objects() {
  local all types out
  all=$(kubectl api-resources --verbs=list -o name) || return 1
  types=$(printf '%s\n' "$all" | grep -v -e '^events' -e '^customresourcedefinitions' | paste -sd, -)
  [ -n "$types" ] || { echo "no resource types listed" >&2; return 1; }
  out=$(kubectl get "$types" -n "$KEELSON_NAMESPACE" -l "app.kubernetes.io/instance=$KEELSON_RELEASE" -o name) || return 1
  [ -z "$out" ] || printf '%s\n' "$out" | sort
}

# helm_release ARGS...: helm upgrade --install the chart under test with the images under test, and wait.
helm_release() {
  # shellcheck disable=SC2086 # KEELSON_VALUES holds several flags
  helm upgrade --install "$KEELSON_RELEASE" "$KEELSON_CHART" -n "$KEELSON_NAMESPACE" --create-namespace $KEELSON_VALUES \
    --wait --timeout 5m "$@"
}

# real_node: the name of the first node that runs containers (not kwok's) and has no taint, so a pod needs no
# toleration to run there: the local cluster's node, or a kind worker.
real_node() {
  local out
  out=$(kubectl get nodes -o go-template='{{range .items}}{{if and (not (index .metadata.annotations "kwok.x-k8s.io/node")) (not .spec.taints)}}{{.metadata.name}}{{"\n"}}{{end}}{{end}}') || return 1
  echo "$out" | head -n 1
}

# ready_pod_other_than SELECTOR UID: a pod of SELECTOR in $NAMESPACE other than the one of UID is Ready.
ready_pod_other_than() {
  local out
  out=$(kubectl -n "$NAMESPACE" get pods -l "$1" -o go-template='{{range .items}}{{.metadata.uid}}{{range .status.conditions}}{{if eq .type "Ready"}} {{.status}}{{end}}{{end}}{{"\n"}}{{end}}') || return 1
  echo "$out" | grep -v "^$2 " | grep -q " True$"
}

# model_server: the echo server, in $NAMESPACE on the real node, serving generated models at
# http://model-server.$NAMESPACE.svc:8080/models/<name>?size=N and counting them at /models-served.
model_server() {
  local node
  node=$(real_node)
  [ -n "$node" ] || { echo "no real node without taints to run on" >&2; return 1; }
  kubectl -n "$NAMESPACE" apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: model-server}
spec:
  selector: {matchLabels: {app: model-server}}
  template:
    metadata: {labels: {app: model-server}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $node}
      containers:
        - {name: server, image: localhost/keelson-echo:e2e, ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: model-server}
spec:
  selector: {app: model-server}
  ports: [{port: 8080, targetPort: 8080}]
YAML
  kubectl -n "$NAMESPACE" rollout status deployment/model-server --timeout=120s
}

# models_served: how many models the model server sent in full.
models_served() {
  kubectl get --raw "/api/v1/namespaces/$NAMESPACE/services/model-server:8080/proxy/models-served"
}

# meshed_and_limited on|off: the release namespace as a service mesh and a policy requiring limits leave it. on: every
# pod created there that does not opt out (annotation sidecar.istio.io/inject: "false") gets a sidecar that never
# exits, injected as a mesh's webhook would (a MutatingAdmissionPolicy), and a ResourceQuota on limits refuses any
# pod whose containers do not all carry cpu and memory limits (a LimitRange cannot refuse them: the apiserver defaults
# a missing limit to its max). off: both gone (the controllers' own pods carry no cpu limit and are not meant to run
# meshed).
meshed_and_limited() {
  if [ "$1" = off ]; then
    kubectl delete mutatingadmissionpolicybinding,mutatingadmissionpolicy e2e-mesh-sidecar --ignore-not-found >/dev/null
    kubectl -n "$KEELSON_NAMESPACE" delete resourcequota e2e-limits-required --ignore-not-found >/dev/null
    return
  fi
  kubectl apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: e2e-mesh-sidecar}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchConditions:
    - name: not-opted-out
      expression: >-
        !has(object.metadata.annotations) || !('sidecar.istio.io/inject' in object.metadata.annotations) ||
        object.metadata.annotations['sidecar.istio.io/inject'] != 'false'
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: >-
          [JSONPatch{op: "add", path: "/spec/containers/-", value: Object.spec.containers{
            name: "mesh-proxy", image: "localhost/keelson-echo:e2e",
            resources: Object.spec.containers.resources{requests: {"cpu": "10m", "memory": "16Mi"}, limits: {"cpu": "50m", "memory": "32Mi"}},
            securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false, runAsNonRoot: true,
              runAsUser: 65532, capabilities: Object.spec.containers.securityContext.capabilities{drop: ["ALL"]},
              seccompProfile: Object.spec.containers.securityContext.seccompProfile{type: "RuntimeDefault"}}}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: e2e-mesh-sidecar}
spec:
  policyName: e2e-mesh-sidecar
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $KEELSON_NAMESPACE}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: e2e-limits-required, namespace: $KEELSON_NAMESPACE}
spec:
  hard: {limits.cpu: "20", limits.memory: 20Gi}
YAML
  # Both bite: a pod that does not opt out gets the sidecar; a container without limits is refused.
  eventually "the mesh injects its sidecar" 30 injected
  eventually "the quota refuses a container without limits" 30 limited
}

# limited: a pod without limits (that opts out of the mesh) is refused in the release namespace, by the quota.
limited() {
  local out
  if out=$(kubectl -n "$KEELSON_NAMESPACE" run e2e-unlimited --image=localhost/keelson-echo:e2e --dry-run=server \
    --overrides='{"metadata":{"annotations":{"sidecar.istio.io/inject":"false"}}}' -o name 2>&1); then
    echo "a pod without limits was admitted: $out" >&2
    return 1
  fi
  case "$out" in *"must specify limits.cpu"*) return 0 ;; esac
  echo "refused, not by the quota: $out" >&2
  return 1
}

# injected: a pod created in the release namespace (a server-side dry run) gets the mesh's sidecar.
injected() {
  local out
  out=$(kubectl -n "$KEELSON_NAMESPACE" run e2e-meshed --image=localhost/keelson-echo:e2e --dry-run=server \
    --overrides='{"spec":{"containers":[{"name":"e2e-meshed","image":"localhost/keelson-echo:e2e","resources":{"limits":{"cpu":"50m","memory":"32Mi"}}}]}}' \
    -o go-template='{{range .spec.containers}}{{.name}} {{end}}') || return 1
  case "$out" in *mesh-proxy*) return 0 ;; esac
  echo "containers: $out" >&2
  return 1
}
