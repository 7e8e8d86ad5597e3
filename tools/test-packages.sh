#!/usr/bin/env bash
# test-packages.sh process|unit [MODULE]: the Go packages of MODULE (a directory holding a go.mod; the current one by
# default) whose tests start processes (they import internal/testenv, which runs kube-apiserver and etcd, or os/exec:
# binaries, git, image builds), or the others; nothing when it has none.
# make test runs the first kind with -count=1: a cached pass of such a test would replay a result that the
# processes never produced again. Pure unit tests may be answered from the cache.
set -euo pipefail
kind=${1:?usage: test-packages.sh process|unit [MODULE]}
module=${2:-.}
list=$(go -C "$module" list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./...)
case "$kind" in
  process) awk '/keelson\/internal\/testenv|[ ]os\/exec( |$)/ { print $1 }' <<<"$list" ;;
  unit) awk '!/keelson\/internal\/testenv|[ ]os\/exec( |$)/ { print $1 }' <<<"$list" ;;
  *) echo "test-packages.sh: unknown kind $kind (process or unit)" >&2; exit 2 ;;
esac
