#!/usr/bin/env bash
# Installs the npm packages of the interop tests and benchmarks exactly as
# package-lock.json pins them; npm ci runs only when what is installed is
# not what is pinned. scripts/test.sh and .ci/run both need them: the
# interop tests run the TypeScript SDK, and go generate reads its schemas.
set -euo pipefail
cd "$(dirname "$0")/.."

#
# interop/agents holds the real agents the interop tests run. Their lock file
# names optional packages for other platforms, and npm ci refuses the lot
# when the registry lacks one of those; npm install against the same lock
# file (--no-save: it is never rewritten) installs what this platform needs,
# and the tests check the pinned versions themselves.
for dir in interop interop/agents bench/ts; do
  [ -f "$dir/package-lock.json" ] || continue
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed" 2>/dev/null; then
    (cd "$dir" && { npm ci --no-audit --no-fund || {
      echo "npm ci refused $dir/package-lock.json; installing against it with npm install"
      npm install --no-audit --no-fund --no-save
    }; })
    cp "$dir/package-lock.json" "$dir/node_modules/.package-lock.json.installed"
  fi
done
