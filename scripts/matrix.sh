#!/usr/bin/env bash
# Draws docs/acpcheck-matrix.html: acpcheck's report on each real agent
# interop/agents pins, as one page (agents down, rules across).
#
#   scripts/matrix.sh              runs acpcheck against the agents (their
#                                  tests, offline, with the fake model)
#   scripts/matrix.sh REPORTS_DIR  draws the reports those tests kept there
#                                  (ACPCHECK_MATRIX_DIR; .ci/run's test run)
set -euo pipefail
cd "$(dirname "$0")/.."

agents=5 # codex-acp, claude-agent-acp, pi-acp, opencode, gemini-cli
reports=${1:-}
if [ -z "$reports" ]; then
  reports=$(mktemp -d)
  trap 'rm -rf "$reports"' EXIT
  bash scripts/node-deps.sh
  ACPCHECK_MATRIX_DIR=$reports go test -count=1 -run 'TestAcpcheck(Codex|Claude|Pi|Opencode|Gemini)$' ./interop/agents
fi
args=()
for f in "$reports"/*.json; do
  [ -e "$f" ] || break
  args+=("$(basename "$f" .json)=$f")
done
[ "${#args[@]}" -eq "$agents" ] ||
  { ls -l "$reports"; echo "matrix: $reports holds ${#args[@]} reports, not the $agents agents' (ACPCHECK_MATRIX_DIR unset in the test run?)" >&2; exit 1; }
go run ./cmd/acpcheck matrix -o docs/acpcheck-matrix.html "${args[@]}"
