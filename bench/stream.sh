#!/usr/bin/env bash
# Takes the figures of the token stream and the stop under it for the record
# (acpbench stream): acprpc, coder's SDK, the TypeScript SDK, the JSON-RPC
# libraries lsp, jrpc2, xexp and sourcegraph, and the floors handoff and echo
# (no library, no JSON; echo streams only, it cannot stop a turn) each
# serving the same streaming agent over stdio, a fresh process per run, RUNS
# interleaved runs; acprpc-unbounded is acprpc with no bound on its unsent
# notifications, as Notify was before it waited for room,
# acprpc-unsent<N> acprpc with MaxUnsentNotifications N, and acprpc-nowait
# acprpc whose notifications never wait for the client's unread input
# (UnreadInputWait negative), as before they did. The peers
# acprpc-ws, ts-ws, acprpc-http and ts-http are the same agents served over
# WebSocket and Streamable HTTP (acprpc's remote.Server, cmd/remoteserver
# -stream; the TypeScript SDK's experimental server, ts/remote-agent.mjs
# stream). Writes results/NAME.txt and results/NAME.json, and
# results/NAME-env.txt with the command, the machine and the load average
# before and after (NAME: stream).
#   ./stream.sh                RUNS=5 rounds of every peer
#   PEERS=acprpc-ws,ts-ws,acprpc-http,ts-http NAME=stream-remote ./stream.sh
#                              the stream over the remote transports
#   SLOW=0 ./stream.sh         without the slow reader
#   SLOW=0 MANY=0 NAME=stream-peers ./stream.sh
#                              rows 1 and 2 alone (the stream, the stop)
#   RUNS=11 CANCELS=60 SLOW=0 MANY=0 NAME=stream-unsent PEERS=acprpc-unsent64,acprpc-unsent32,acprpc-unsent16,acprpc-unsent8,lsp,coder ./stream.sh
#                              rows 1 and 2 for bounds on the unsent
#                              notifications, beside the nearest peers
#   TURNS=0 CANCELS=0 ./stream.sh   the slow reader alone
#   RCVBUF=65536 ./stream.sh   the remote client's socket receive buffer fixed
#                              at 64 KiB, a pipe's (default: the kernel's,
#                              which grows to megabytes during the fast rows)
#   QUIET=1.5 ./stream.sh      first wait (polling every 30 s, at most
#                              15 minutes) for a 1-minute load average below 1.5
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-5}
CANCELS=${CANCELS:-40}
PEERS=${PEERS:-acprpc,coder,ts,lsp,jrpc2,xexp,sourcegraph,handoff,echo,acprpc-unbounded}
NAME=${NAME:-stream}
SLOW=${SLOW:-3s}
TURNS=${TURNS:-3}
MANY=${MANY:-100}
RCVBUF=${RCVBUF:-0}
out=results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/acpbench" ./cmd/acpbench
go build -o "$tmp/server" ./cmd/server
go build -o "$tmp/remoteserver" ./cmd/remoteserver
(cd ts && npm ci --no-audit --no-fund --loglevel=error)

source ./quiet.sh

cmd=(acpbench stream -server cmd/server -remoteserver cmd/remoteserver -ts ts -runs "$RUNS" -cancels "$CANCELS" -turns "$TURNS" -many "$MANY" -slow "$SLOW" -peers "$PEERS" -rcvbuf "$RCVBUF" -name "$NAME")
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "command: (cd bench && ${QUIET:+QUIET=$QUIET }RUNS=$RUNS CANCELS=$CANCELS PEERS=$PEERS NAME=$NAME SLOW=$SLOW TURNS=$TURNS MANY=$MANY RCVBUF=$RCVBUF ./stream.sh), which runs: ${cmd[*]}"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "go: $(go version)"
  echo "node: $(node --version)"
  go list -m -f 'coder: {{.Path}} {{.Version}}' github.com/coder/acp-go-sdk
  echo "ts: @agentclientprotocol/sdk $(node -p 'require("./ts/node_modules/@agentclientprotocol/sdk/package.json").version'), ws $(node -p 'require("./ts/node_modules/ws/package.json").version')"
  echo "uptime at start: $(uptime)"
} >"$out/$NAME-env.txt"
"$tmp/acpbench" stream -server "$tmp/server" -remoteserver "$tmp/remoteserver" -ts ts -runs "$RUNS" -cancels "$CANCELS" -turns "$TURNS" -many "$MANY" -slow "$SLOW" -peers "$PEERS" -rcvbuf "$RCVBUF" -name "$NAME" -out "$out"
echo "uptime at end: $(uptime)" >>"$out/$NAME-env.txt"
cat "$out/$NAME-env.txt"
