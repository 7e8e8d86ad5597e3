#!/usr/bin/env bash
# install.sh installs Keelson's pinned tools into bin/ on first use and prints the installed path.
#
#   tools/install.sh TOOL        TOOL is one of: controller-gen golangci-lint kube-api-linter helm helm-docs kwok kwokctl chainsaw setup-envtest
#                                envtest (kube-apiserver + etcd + kubectl, prints the directory for KUBEBUILDER_ASSETS)
#                                kube (every Kubernetes binary a local cluster needs, prints the directory)
#                                kind, coredns, tini (Debian's tini-static, installed with apt), pause (compiled with gcc)
#                                the shell linter, shellcheck (Debian's, installed with apt)
#                                promtool (Prometheus's rule checker, built from the wrapper module tools/modules/promtool)
#                                monitoring-crds (the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, prints the directory)
#                                tini-ARCH (Debian's tini-static for ARCH, e.g. tini-arm64: the images make release builds)
#
# Versions come from tools/versions.env. Every tool lands under bin/ with its version in its path, so a version bump
# installs the new one beside the old and nothing is ever stale. Nothing here is committed.
#
# Kubernetes and etcd binaries: the normal download path (setup-envtest) is tried first; where it cannot reach its
# servers (an offline machine), they are built from the Go module proxy with the wrapper modules in tools/modules/,
# version-stamped so that kubectl and Helm version checks see a real version.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${KEELSON_BIN:-$ROOT/bin}
# shellcheck source=versions.env
source "$ROOT/tools/versions.env"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { echo "install.sh: $*" >&2; }

# go_install NAME VERSION PACKAGE [LDFLAGS]: go install PACKAGE@VERSION as bin/NAME-VERSION, linked as bin/NAME.
go_install() {
  local name=$1 version=$2 pkg=$3 ldflags=${4:-}
  local dest=$BIN/$name-$version
  if [ ! -x "$dest" ]; then
    log "building $name $version (first use; cached in bin/)"
    local tmp
    tmp=$(mktemp -d "$BIN/.gobin.XXXXXX")
    GOBIN=$tmp go install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version"
    mv "$tmp"/* "$dest" # the temporary GOBIN holds exactly one binary
    rm -rf "$tmp"
  fi
  ln -sfn "$name-$version" "$BIN/$name"
  echo "$dest"
}

# kube_ldflags stamps the version into every Kubernetes component and client library.
kube_ldflags() {
  local v=$KUBE_VERSION major minor
  major=$(echo "${v#v}" | cut -d. -f1)
  minor=$(echo "${v#v}" | cut -d. -f2)
  local f=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f="$f -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$f"
}

# build_kube DIR CMD...: build the named k8s.io/kubernetes commands into DIR from the wrapper module.
build_kube() {
  local dir=$1; shift
  local pkgs=()
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  log "building ${*} $KUBE_VERSION from the Go module proxy (first use takes minutes; cached in bin/)"
  (cd "$ROOT/tools/modules/kube" && go build -trimpath -ldflags "-s -w $(kube_ldflags)" -o "$dir/" "${pkgs[@]}")
}

build_etcd() {
  local dir=$1
  log "building etcd $ETCD_VERSION from the Go module proxy (cached in bin/)"
  (cd "$ROOT/tools/modules/etcd" && go build -trimpath -ldflags "-s -w" -o "$dir/etcd" go.etcd.io/etcd/server/v3)
}

# try_setup_envtest DIR: the normal path for users with internet. Returns non-zero when it cannot download.
try_setup_envtest() {
  local dir=$1 se path
  [ "${KEELSON_OFFLINE:-}" = 1 ] && return 1
  se=$(go_install setup-envtest "$SETUP_ENVTEST_VERSION" sigs.k8s.io/controller-runtime/tools/setup-envtest 2>/dev/null) || return 1
  path=$(timeout 60 "$se" use "${KUBE_VERSION#v}" --bin-dir "$BIN/.setup-envtest" -p path 2>/dev/null) || return 1
  [ -x "$path/kube-apiserver" ] && [ -x "$path/etcd" ] || return 1
  cp "$path/kube-apiserver" "$path/etcd" "$dir/"
  [ -x "$path/kubectl" ] && cp "$path/kubectl" "$dir/"
  return 0
}

# envtest: kube-apiserver, etcd and kubectl in one directory (what KUBEBUILDER_ASSETS expects).
install_envtest() {
  local dir=$BIN/k8s/$KUBE_VERSION
  if [ ! -f "$dir/.envtest-ready" ]; then
    mkdir -p "$dir"
    if ! try_setup_envtest "$dir"; then
      log "setup-envtest could not download $KUBE_VERSION; building from source instead"
      if [ ! -x "$dir/kube-apiserver" ] || [ ! -x "$dir/kubectl" ]; then build_kube "$dir" kube-apiserver kubectl; fi
      [ -x "$dir/etcd" ] || build_etcd "$dir"
    fi
    [ -x "$dir/kubectl" ] || build_kube "$dir" kubectl
    touch "$dir/.envtest-ready"
  fi
  echo "$dir"
}

# kube: everything a local cluster runs (control plane, node agents, etcd), in the same directory as envtest's.
install_kube() {
  local dir=$BIN/k8s/$KUBE_VERSION
  install_envtest >/dev/null
  if [ ! -f "$dir/.cluster-ready" ]; then
    local missing=()
    for c in kube-controller-manager kube-scheduler kubelet kube-proxy; do
      [ -x "$dir/$c" ] || missing+=("$c")
    done
    [ ${#missing[@]} -eq 0 ] || build_kube "$dir" "${missing[@]}"
    touch "$dir/.cluster-ready"
  fi
  echo "$dir"
}

# chainsaw v0.2.12 needs an older toolchain and is missing from the checksum database, so it is built from a
# throw-away module that requires it.
install_chainsaw() {
  local dest=$BIN/chainsaw-$CHAINSAW_VERSION
  if [ ! -x "$dest" ]; then
    log "building chainsaw $CHAINSAW_VERSION with $CHAINSAW_GOTOOLCHAIN (first use; cached in bin/)"
    local tmp
    tmp=$(mktemp -d "$BIN/.chainsaw.XXXXXX")
    cat >"$tmp/go.mod" <<EOF
module keelson.local/tools/chainsaw

go 1.23
EOF
    cat >"$tmp/tools.go" <<'EOF'
//go:build tools

package tools

import _ "github.com/kyverno/chainsaw"
EOF
    (cd "$tmp" && export GOTOOLCHAIN=$CHAINSAW_GOTOOLCHAIN GONOSUMDB=github.com/kyverno/chainsaw GOFLAGS=-mod=mod &&
      go get "github.com/kyverno/chainsaw@$CHAINSAW_VERSION" &&
      go build -trimpath -ldflags "-s -w" -o "$dest" github.com/kyverno/chainsaw)
    rm -rf "$tmp"
  fi
  ln -sfn "chainsaw-$CHAINSAW_VERSION" "$BIN/chainsaw"
  echo "$dest"
}

# kwok's stages (node Ready and heartbeat by lease; pods Ready, completed, deleted) as the pinned kwok release ships
# them, gathered into one config file: bin/kwok-stages-<version>.yaml. The kwok controller needs them to act.
install_kwok_stages() {
  local dest=$BIN/kwok-stages-$KWOK_VERSION.yaml
  if [ ! -f "$dest" ]; then
    local src tmp
    src=$(cd "$ROOT/tools/modules/kube" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    tmp=$(mktemp "$BIN/.kwok-stages.XXXXXX")
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      [ -f "$src/kustomize/stage/$f" ] || { log "kwok stage $f not found in $src"; exit 1; }
      { echo "---"; cat "$src/kustomize/stage/$f"; } >>"$tmp"
    done
    mv "$tmp" "$dest"
  fi
  echo "$dest"
}

# pause: the pod sandbox's process, compiled (static) from pause.c in the pinned k8s.io/kubernetes module, as the
# official pause image is. No registry serves the image here, so the local cluster builds it from this binary.
install_pause() {
  local dest=$BIN/pause-$PAUSE_VERSION
  if [ ! -x "$dest" ]; then
    local src
    src=$(cd "$ROOT/tools/modules/kube" && go mod download -json k8s.io/kubernetes | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -f "$src/build/pause/linux/pause.c" ] || { log "pause.c not found in the k8s.io/kubernetes module ($src)"; exit 1; }
    command -v gcc >/dev/null || { log "gcc is missing: install Debian's gcc and libc6-dev"; exit 1; }
    log "compiling pause $PAUSE_VERSION"
    gcc -Os -Wall -Werror -static -DVERSION="$PAUSE_VERSION" -o "$dest" "$src/build/pause/linux/pause.c"
  fi
  ln -sfn "pause-$PAUSE_VERSION" "$BIN/pause"
  echo "$dest"
}

# promtool checks and unit-tests the chart's alerting rules. `go install .../cmd/promtool@<version>` cannot work:
# Prometheus's go.mod carries replace directives in some releases, and the Nomad client its newest release requires
# is not on the Go module proxy. So it is built from a wrapper module that pins the release and replaces only that
# client (tools/modules/promtool/go.mod); PROMETHEUS_VERSION must match the release the module requires.
install_promtool() {
  local dest=$BIN/promtool-$PROMETHEUS_VERSION mod=$ROOT/tools/modules/promtool
  if [ ! -x "$dest" ]; then
    grep -q "github.com/prometheus/prometheus $PROMETHEUS_VERSION\$" "$mod/go.mod" || {
      log "tools/modules/promtool/go.mod does not require github.com/prometheus/prometheus $PROMETHEUS_VERSION"; exit 1; }
    # Prometheus's module versions v0.3MM.P are its releases v3.MM.P.
    local release minor
    minor=$(echo "$PROMETHEUS_VERSION" | cut -d. -f2)
    release="3.$((10#${minor#3})).$(echo "$PROMETHEUS_VERSION" | cut -d. -f3)"
    log "building promtool $release ($PROMETHEUS_VERSION) from the Go module proxy (first use takes minutes; cached in bin/)"
    (cd "$mod" && go build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
      -o "$dest" github.com/prometheus/prometheus/cmd/promtool)
  fi
  ln -sfn "promtool-$PROMETHEUS_VERSION" "$BIN/promtool"
  echo "$dest"
}

# monitoring-crds: the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs as its pinned release ships them,
# from its Go module (the proxy serves it where GitHub's release assets cannot be reached), into
# bin/monitoring-crds-<version>/. The chart's tests validate its monitoring objects against them, and make dev
# MONITORING=1 installs them so the chart's monitoring applies to the local cluster.
install_monitoring_crds() {
  local dest=$BIN/monitoring-crds-$PROMETHEUS_OPERATOR_VERSION
  if [ ! -f "$dest/.ready" ]; then
    local src
    src=$(cd "$ROOT/tools/modules/promtool" && GOFLAGS=-mod=mod go mod download -json \
      "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    mkdir -p "$dest"
    for k in servicemonitors prometheusrules; do
      local f=$src/example/prometheus-operator-crd/monitoring.coreos.com_$k.yaml
      [ -f "$f" ] || { log "$f not found in the prometheus-operator module"; exit 1; }
      cp "$f" "$dest/"
    done
    chmod -R u+w "$dest"
    touch "$dest/.ready"
  fi
  echo "$dest"
}

# debian_package PACKAGE PATH: a Debian package's program, installed with apt when missing (these machines run as
# root); prints PATH.
debian_package() {
  local pkg=$1 path=$2
  if [ ! -x "$path" ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      log "$path is missing: install Debian's $pkg package (apt-get install $pkg)"; exit 1
    fi
    log "installing Debian's $pkg package"
    (apt-get install -y -qq "$pkg" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$pkg"; }) >&2
  fi
  echo "$path"
}

# tini: Debian's static tini, the images' PID 1.
install_tini() { debian_package tini /usr/bin/tini-static; }

# The shell linter: Debian's shellcheck, for make lint.
install_shellcheck() { debian_package shellcheck /usr/bin/shellcheck; }

# tini-ARCH: Debian's static tini built for ARCH (amd64, arm64), for the multi-architecture images of make release.
# This machine's own architecture is the tini package installed above. Another architecture's package is fetched
# with apt into bin/ under a private package list (apt-get download, not install), so the machine's dpkg
# configuration is left as it was: no `dpkg --add-architecture`, nothing installed. The package is unpacked with
# dpkg-deb and its tini-static printed.
install_tini_arch() {
  local arch=$1
  if [ "$arch" = "$(dpkg --print-architecture 2>/dev/null || go env GOARCH)" ]; then install_tini; return; fi
  local found="" f
  for f in "$BIN"/tini-*-"$arch"/usr/bin/tini-static; do
    if [ -x "$f" ]; then found=$f; fi
  done
  if [ -z "$found" ]; then
    if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
      log "Debian's apt-get and dpkg-deb are needed to fetch tini for $arch"; exit 1
    fi
    log "fetching Debian's tini package for $arch"
    local state=$BIN/apt-$arch
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
    local apt=(apt-get -qq -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o "Dir::State::Lists=$state/lists"
      -o "Dir::Cache=$state/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
    "${apt[@]}" update >&2
    (cd "$state/debs" && rm -f tini_*.deb && "${apt[@]}" download tini >&2)
    local deb version
    deb=$(ls "$state"/debs/tini_*_"$arch".deb)
    version=$(dpkg-deb -f "$deb" Version)
    dpkg-deb -x "$deb" "$BIN/tini-$version-$arch"
    found=$BIN/tini-$version-$arch/usr/bin/tini-static
  fi
  echo "$found"
}

main() {
  [ $# -eq 1 ] || { sed -n '2,12p' "${BASH_SOURCE[0]}" >&2; exit 2; }
  mkdir -p "$BIN"
  case $1 in
    controller-gen) go_install controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    golangci-lint) go_install golangci-lint "$GOLANGCI_LINT_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
    kube-api-linter) go_install kube-api-linter "$KUBE_API_LINTER_VERSION" sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter ;;
    helm-docs) go_install helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs/cmd/helm-docs ;;
    helm) # Stamp the Kubernetes version Helm assumes for `helm template` and lint (as Helm's own build does).
          local kmaj kmin
          kmaj=$(echo "${KUBE_VERSION#v}" | cut -d. -f1); kmin=$(echo "${KUBE_VERSION#v}" | cut -d. -f2)
          go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmaj -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kmin \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmaj -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kmin" ;;
    kwok) install_kwok_stages >/dev/null
          go_install kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;
    kwokctl) go_install kwokctl "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwokctl ;;
    kind) go_install kind "$KIND_VERSION" sigs.k8s.io/kind ;;
    coredns) go_install coredns "$COREDNS_VERSION" github.com/coredns/coredns ;;
    chainsaw) install_chainsaw ;;
    tini) install_tini ;;
    shellcheck) install_shellcheck ;;
    tini-*) install_tini_arch "${1#tini-}" ;;
    pause) install_pause ;;
    promtool) install_promtool ;;
    monitoring-crds) install_monitoring_crds ;;
    setup-envtest) go_install setup-envtest "$SETUP_ENVTEST_VERSION" sigs.k8s.io/controller-runtime/tools/setup-envtest ;;
    envtest) install_envtest ;;
    kube) install_kube ;;
    *) log "unknown tool: $1"; exit 2 ;;
  esac
}

main "$@"
