#!/usr/bin/env bash
# Takes, side by side in one run, the figures of the stdio-sequential and
# decoding goals for the record:
#   - stdio sequential over a spawned server (acpbench stdio), ROUNDS rounds
#     of every row in turn (acprpc, the hand-off floor, go.lsp.dev, the echo
#     floor), each run a fresh process: calls per second and each side's CPU
#     per call, every round and the medians, and acprpc against the hand-off
#     floor and go.lsp.dev round by round;
#   - in process (go test -bench, COUNT interleaved runs): BenchmarkRoundTrip
#     (os.Pipe) and BenchmarkRoundTripStdio (the agent on blocking
#     descriptors) for the same peers, and BenchmarkDecode1MiB (a 1 MiB
#     prompt, prose and escaped code, into the hand-written struct, acpv1's
#     and coder's generated types), each through benchstat.
# Writes results/record.txt (the tables), results/record-gobench.txt and
# results/record-stdio.txt (the raw runs), with the command, the machine and
# uptime's load average before and after.
#   ./record.sh                  ROUNDS=9 COUNT=8
#   QUIET=1.5 ./record.sh        first wait (polling every 30 s, at most 15
#                                minutes) for a 1-minute load average below 1.5
#   LOCK=FILE ./record.sh        then hold flock on FILE while measuring, so
#                                that another recording waits for this one
set -euo pipefail
cd "$(dirname "$0")"
ROUNDS=${ROUNDS:-9}
COUNT=${COUNT:-8}
CALLS=${CALLS:-20000}
ROWS=${ROWS:-acprpc:acprpc,handoff:handoff,lsp:lsp,echo:echo}
PEERS=${PEERS:-acprpc|handoff|lsp|echo}
out=results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$(go env GOPATH)/bin:$PATH"
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
go build -o "$tmp/acpbench" ./cmd/acpbench
go build -o "$tmp/server" ./cmd/server
go test -c -o "$tmp/bench.test" .

source ./quiet.sh
if [[ -n "${LOCK:-}" ]]; then
  exec {lock}>"$LOCK"
  flock "$lock"
fi

report=$out/record.txt
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "command: (cd bench && ROUNDS=$ROUNDS COUNT=$COUNT CALLS=$CALLS ./record.sh)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "go: $(go version)"
  go list -m -f 'peer: {{.Path}} {{.Version}}' github.com/coder/acp-go-sdk go.lsp.dev/jsonrpc2
  echo "uptime at start: $(uptime)"
} >"$report"
cat "$report"

echo "== stdio sequential: $ROUNDS rounds of $ROWS, $CALLS calls each"
: >"$out/record-stdio.txt"
for i in $(seq "$ROUNDS"); do
  "$tmp/acpbench" stdio -server "$tmp/server" -rows "$ROWS" -calls "$CALLS" -runs 1 -out "$tmp/stdio" >/dev/null
  awk -v r="$i" '$3 ~ /×$/ { print "round " r, $1, $2, $7, $9 }' "$tmp/stdio/stdio.txt" | tee -a "$out/record-stdio.txt"
done

echo "== in process: $COUNT interleaved runs"
: >"$out/record-gobench.txt"
for i in $(seq "$COUNT"); do
  echo "run $i/$COUNT"
  "$tmp/bench.test" -test.run '^$' -test.bench "^BenchmarkRoundTrip(Stdio)?\$/peer=($PEERS)\$" \
    -test.benchtime 1s -test.benchmem >>"$out/record-gobench.txt"
  "$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkDecode1MiB$' -test.benchtime 30x -test.benchmem >>"$out/record-gobench.txt"
done

{
  echo
  echo "stdio sequential, $CALLS calls per run, $ROUNDS rounds (each round every row, each run a fresh process)"
  echo "calls/s and CPU µs per call (client / server): median over the rounds, then each round"
  awk '
    !($3 in row) { row[$3] = ++rows; order[rows] = $3 }
    { cps[$3, $2] = $4; cli[$3, $2] = $5; srv[$3, $2] = $6; if ($2 > n) n = $2 }
    function median(a, key,   i, v, k, t) {
      k = 0
      for (i = 1; i <= n; i++) v[++k] = a[key, i]
      for (i = 1; i <= k; i++) for (t = i + 1; t <= k; t++) if (v[t] + 0 < v[i] + 0) { x = v[i]; v[i] = v[t]; v[t] = x }
      return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
      printf "%-10s %9s %14s   %s\n", "row", "calls/s", "cpu µs c / s", "rounds (calls/s cpu c/s)"
      for (j = 1; j <= rows; j++) {
        r = order[j]
        line = ""
        for (i = 1; i <= n; i++) line = line sprintf(" %s %s/%s", cps[r, i], cli[r, i], srv[r, i])
        printf "%-10s %9.0f %6.1f / %5.1f  %s\n", r, median(cps, r), median(cli, r), median(srv, r), line
      }
      print ""
      print "acprpc against the hand-off floor and go.lsp.dev, round by round (calls/s ratio):"
      for (i = 1; i <= n; i++) {
        h = cps["handoff", i]; l = cps["lsp", i]
        printf "  round %d: %.2fx the hand-off floor, %.2fx go.lsp.dev\n", i, h ? cps["acprpc", i] / h : 0, l ? cps["acprpc", i] / l : 0
      }
    }' "$out/record-stdio.txt"
  echo
  echo "in process, $COUNT interleaved runs (benchstat -col /peer)"
  benchstat -col /peer -filter '.name:(RoundTrip OR RoundTripStdio) .unit:(sec/op OR cpu-ns/op OR allocs/op)' "$out/record-gobench.txt"
  echo
  echo "decoding a 1 MiB prompt, $COUNT interleaved runs (benchstat -col /types)"
  benchstat -col /types -filter '.name:Decode1MiB .unit:(sec/op OR cpu-ns/op OR B/op OR allocs/op)' "$out/record-gobench.txt"
  echo
  echo "uptime at end: $(uptime)"
} >>"$report"
cat "$report"
