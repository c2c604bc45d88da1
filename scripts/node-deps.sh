#!/usr/bin/env bash
# Installs the npm packages of the interop tests and benchmarks exactly as
# package-lock.json pins them; npm ci runs only when what is installed is
# not what is pinned. scripts/test.sh and .ci/run both need them: the
# interop tests run the TypeScript SDK, and go generate reads its schemas.
set -euo pipefail
cd "$(dirname "$0")/.."

for dir in interop bench/ts; do
  [ -f "$dir/package-lock.json" ] || continue
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed" 2>/dev/null; then
    (cd "$dir" && npm ci --no-audit --no-fund)
    cp "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed"
  fi
done
