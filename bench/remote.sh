#!/usr/bin/env bash
# The remote server's figures in one run: acprpc's remote.Server (built from
# cmd/remoteserver) and the TypeScript SDK's experimental server
# (ts/remote-agent.mjs), each over WebSocket and Streamable HTTP, driven by
# one load generator (acpbench remote). Writes into results/:
#   remote.txt/json   the table, every run's figures
#   remote-env.txt    the command, the machine, the toolchains, the load average
# RUNS (3) runs per row, interleaved, each in a fresh server; CONNS (1,000)
# connections at once. About 8 minutes on 2 cores; QUICK=1 for a smoke run.
set -euo pipefail
cd "$(dirname "$0")"

RUNS=${RUNS:-3}
CONNS=${CONNS:-1000}
DURATION=${DURATION:-3s}
CANCELS=${CANCELS:-1000}
if [[ "${QUICK:-}" == 1 ]]; then
  RUNS=1 CONNS=100 DURATION=0.5s CANCELS=100
fi

out=results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash ../scripts/node-deps.sh # the pinned SDK and ws in ts/node_modules (a no-op once installed)
go build -o "$tmp/remoteserver" ./cmd/remoteserver
go build -o "$tmp/acpbench" ./cmd/acpbench

cmd=(acpbench remote -remoteserver remoteserver -ts ts -runs "$RUNS" -conns "$CONNS" -duration "$DURATION" -cancels "$CANCELS")
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "command: bench/remote.sh (${cmd[*]})"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "go: $(go version)"
  echo "node: $(node --version)"
  echo "  @agentclientprotocol/sdk $(node -p 'require("./ts/node_modules/@agentclientprotocol/sdk/package.json").version'), ws $(node -p 'require("./ts/node_modules/ws/package.json").version')"
  echo "uptime at start: $(uptime)"
} > "$out/remote-env.txt"
cat "$out/remote-env.txt"

"$tmp/acpbench" remote -out "$out" -remoteserver "$tmp/remoteserver" -ts ts \
  -runs "$RUNS" -conns "$CONNS" -duration "$DURATION" -cancels "$CANCELS"

echo "uptime at end: $(uptime)" | tee -a "$out/remote-env.txt"
