#!/usr/bin/env bash
# Every test of the repository, on a machine with Go and Node.js: installs
# the pinned TypeScript SDK the interop tests run against, then runs every
# Go test under the race detector. Nothing is skipped: a missing tool fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# The interop packages, exactly as package-lock.json pins them.
bash scripts/node-deps.sh

# Every module of the workspace, as go.work lists them: the root package, the
# remote transports, the examples and the benchmark module's adapters. The
# limit is a package's, above go test's default of 10 minutes: acpcheck's
# package starts hundreds of agents under the race detector, and on a loaded
# 2-core machine takes about that long; a test that hangs still fails.
go test -race -timeout 25m "$@" github.com/acpkit/acprpc/...
