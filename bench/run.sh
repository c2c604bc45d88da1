#!/usr/bin/env bash
# Runs every benchmark of this module and writes the tables and the chart
# into results/:
#   gobench.txt      raw `go test -bench` output, COUNT interleaved runs
#   benchstat.txt    benchstat of it, peers side by side (first column acprpc)
#   stdio.txt/json   calls per second over a spawned server's stdio
#   cancel.txt/json  cancel latency over stdio, p50/p99
#   scale.txt/json   10,000 and 100,000 requests in flight, then cancelled
#   sessions.txt/json 1,000 sessions with a turn in flight, every turn cancelled the ACP way
#   stream.txt/json  the token stream and the stop under it (stream.sh), acprpc beside coder, the TypeScript SDK, the JSON-RPC libraries and the floors
#   remote.txt/json  acprpc's remote server beside the TypeScript SDK's (remote.sh)
#   chart.svg        round trip and cancel latency per peer
#   env.txt          machine, toolchains and peer versions
# About 5 minutes on 2 cores. QUICK=1 runs a short smoke version.
set -euo pipefail
cd "$(dirname "$0")"
start=$(date +%s)

COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-0.2s}
CALLS=${CALLS:-20000}
RUNS=${RUNS:-3}
CANCELS=${CANCELS:-1000}
SCALE_N=${SCALE_N:-10000,100000}
SESSIONS=${SESSIONS:-1000}
STREAM_CANCELS=${STREAM_CANCELS:-40}
if [[ "${QUICK:-}" == 1 ]]; then
  COUNT=1 BENCHTIME=0.05s CALLS=2000 RUNS=1 CANCELS=100 SCALE_N=2000 SESSIONS=200 STREAM_CANCELS=5
fi

out=results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step() { printf '\n== %s (%ds)\n' "$*" $(( $(date +%s) - start )); }

step "tools"
export PATH="$(go env GOPATH)/bin:$PATH"
if ! command -v benchstat >/dev/null; then
  go install golang.org/x/perf/cmd/benchstat@latest
fi
have_node=0
if command -v node >/dev/null && command -v npm >/dev/null; then
  (cd ts && npm ci --no-audit --no-fund --loglevel=error) && have_node=1
fi
[[ $have_node == 1 ]] || echo "node/npm missing: TypeScript SDK rows will be skipped"
go build -o "$tmp/server" ./cmd/server
go build -o "$tmp/acpbench" ./cmd/acpbench
go test -c -o "$tmp/bench.test" .

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "go: $(go version)"
  [[ $have_node == 1 ]] && echo "node: $(node --version)"
  echo "peers:"
  go list -m -f '  {{.Path}} {{.Version}}' github.com/sourcegraph/jsonrpc2 github.com/coder/acp-go-sdk go.lsp.dev/jsonrpc2 github.com/creachadair/jrpc2 golang.org/x/exp/jsonrpc2
  [[ $have_node == 1 ]] && echo "  @agentclientprotocol/sdk $(node -p 'require("./ts/node_modules/@agentclientprotocol/sdk/package.json").version')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "settings: COUNT=$COUNT BENCHTIME=$BENCHTIME CALLS=$CALLS RUNS=$RUNS CANCELS=$CANCELS SCALE_N=$SCALE_N SESSIONS=$SESSIONS"
} > "$out/env.txt"
cat "$out/env.txt"

step "in-process benchmarks over os.Pipe: $COUNT interleaved runs, -benchtime $BENCHTIME"
: > "$out/gobench.txt"
for i in $(seq "$COUNT"); do
  echo "run $i/$COUNT"
  "$tmp/bench.test" -test.run '^$' -test.bench . -test.benchtime "$BENCHTIME" -test.count 1 >> "$out/gobench.txt"
done
benchstat -col /peer "$out/gobench.txt" > "$out/benchstat.txt"
cat "$out/benchstat.txt"

step "stdio round trips: $CALLS calls, $RUNS runs per row"
"$tmp/acpbench" stdio -out "$out" -server "$tmp/server" -ts ts -calls "$CALLS" -runs "$RUNS"

step "cancel latency over stdio: $CANCELS cancellations per row"
"$tmp/acpbench" cancel -out "$out" -server "$tmp/server" -ts ts -n "$CANCELS"

step "scale: $SCALE_N requests in flight"
"$tmp/acpbench" scale -out "$out" -n "$SCALE_N"

step "sessions: $SESSIONS turns in flight, cancelled at once, $RUNS runs per peer"
"$tmp/acpbench" sessions -out "$out" -n "$SESSIONS" -runs "$RUNS"

step "stream: a turn of 10,000 chunks, the stop under it, a slow reader; $RUNS runs per peer"
RUNS=$RUNS CANCELS=$STREAM_CANCELS ./stream.sh

step "stream over the remote transports: the same over WebSocket and Streamable HTTP; $RUNS runs per peer"
RUNS=$RUNS CANCELS=$STREAM_CANCELS PEERS=acprpc-ws,ts-ws,acprpc-http,ts-http NAME=stream-remote ./stream.sh

step "the slow reader over the remote transports, the client's receive buffer fixed at a pipe's 64 KiB; $RUNS runs per peer"
RUNS=$RUNS CANCELS=0 TURNS=0 RCVBUF=65536 PEERS=acprpc-ws,ts-ws,acprpc-http,ts-http NAME=stream-remote-rcvbuf ./stream.sh

step "remote: acprpc's and the TypeScript SDK's servers over WebSocket and Streamable HTTP"
RUNS=$RUNS QUICK=${QUICK:-} ./remote.sh

step "chart"
go run ./cmd/chart -in "$out" -out "$out/chart.svg"
echo "wrote $out/chart.svg"

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/env.txt"
step "done"
