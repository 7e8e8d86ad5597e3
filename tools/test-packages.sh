#!/usr/bin/env bash
# test-packages.sh process|unit [MODULE]: the Go packages of MODULE (a directory holding a go.mod; the current one by
# default) with tests of that kind, or nothing when it has none.
#
# A test file that starts processes (internal/testenv's kube-apiserver and etcd, binaries, git, image builds) carries
# the build tag `integration`; every other test is pure. So:
#   unit:    every package, built without the tag: its pure tests, cached when unchanged.
#   process: every package with a test file of the tag, built with it: make test runs them with -count=1, since a
#            cached pass of such a test would replay a result that the processes never produced again (its pure
#            tests run again beside them, uncached: they take seconds).
set -euo pipefail
kind=${1:?usage: test-packages.sh process|unit [MODULE]}
module=${2:-.}
case "$kind" in
  unit) go -C "$module" list ./... ;;
  process)
    list=$(go -C "$module" list -tags integration -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...)
    while read -r pkg dir files; do
      for f in $files; do
        if [ "$(head -n 1 "$dir/$f")" = "//go:build integration" ]; then
          echo "$pkg"
          break
        fi
      done
    done <<<"$list"
    ;;
  *) echo "test-packages.sh: unknown kind $kind (process or unit)" >&2; exit 2 ;;
esac
