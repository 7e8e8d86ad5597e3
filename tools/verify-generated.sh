#!/usr/bin/env bash
# verify-generated.sh runs the given command (the generators, formatters and go mod tidy) and fails if it changed
# anything: a generated file edited by hand, a marker changed without regenerating, unformatted code or an untidy
# go.mod all show up as drift. It compares the tree before and after, so it works on a dirty work tree too: only
# what the command itself changes counts.
#
#   tools/verify-generated.sh make generate manifests fmt tidy
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

snapshot() {
  # Tracked changes against HEAD plus the content of every untracked, non-ignored file.
  git diff HEAD --binary
  git ls-files --others --exclude-standard -z | xargs -0 -r sha256sum
}

before=$(mktemp) after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot >"$before"
"$@"
snapshot >"$after"
if ! cmp -s "$before" "$after"; then
  echo "verify: '$*' changed the tree; regenerate and commit the result:" >&2
  diff "$before" "$after" | head -80 >&2 || true
  exit 1
fi
echo "verify: generated files, formatting and go.mod are up to date"
