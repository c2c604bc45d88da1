#!/usr/bin/env bash
# Takes the figures of the burst of cancels for the record: 1,000 sessions on
# a spawned agent, each turn holding a permission request and terminal/create
# at the client, then 1,000 session/cancel in one write (acpbench burst).
# examples/agent in its graceful and its prompt mode and coder's SDK run side
# by side, interleaved, each run a fresh process, with the same turn on
# acprpc in the bench's server stamping each phase of the cascade. Writes
# results/burst.txt and results/burst.json, and results/burst-env.txt with
# the command, the machine and the load average before and after.
#   ./burst.sh                 RUNS=9 rounds of every agent (OUT=dir writes there instead)
#   QUIET=1.5 ./burst.sh       first wait (polling every 30 s, at most
#                              15 minutes) for a 1-minute load average below 1.5
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-9}
N=${N:-1000}
AGENTS=${AGENTS:-acprpc,acprpc-prompt,coder,acprpc-phases,acprpc-phases-prompt,coder-lean,acprpc-lean}
out=${OUT:-results}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/acpbench" ./cmd/acpbench
go build -o "$tmp/server" ./cmd/server
(cd ../examples && go build -o "$tmp/agent" ./agent)

source ./quiet.sh

cmd=(acpbench burst -agent examples/agent -server cmd/server -n "$N" -runs "$RUNS" -agents "$AGENTS")
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "command: (cd bench && ${QUIET:+QUIET=$QUIET }RUNS=$RUNS N=$N AGENTS=$AGENTS ./burst.sh), which runs: ${cmd[*]}"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "go: $(go version)"
  go list -m -f 'coder: {{.Path}} {{.Version}}' github.com/coder/acp-go-sdk
  echo "uptime at start: $(uptime)"
} >"$out/burst-env.txt"
"$tmp/acpbench" burst -agent "$tmp/agent" -server "$tmp/server" -n "$N" -runs "$RUNS" -agents "$AGENTS" -out "$out"
echo "uptime at end: $(uptime)" >>"$out/burst-env.txt"
cat "$out/burst-env.txt"
