#!/usr/bin/env bash
# Counts what one sequential call over a spawned server's stdio costs in
# system calls and context switches, client and server apart: perf stat of
# `acpbench stdio -seqonly` over a run of SHORT calls and one of LONG calls,
# differenced, so that the start-up and the warm-up cancel out. The server
# is counted alone by running it under a perf stat of its own, given to
# acpbench as the server; the client is the whole less the server.
# Counts of system calls move far less with the machine's load than times.
# Needs perf and access to the syscalls tracepoints (root, or
# kernel.perf_event_paranoid at most 1).
#   ./syscalls.sh                  the acprpc row
#   ./syscalls.sh echo:echo lsp    rows as acpbench -rows takes them
set -euo pipefail
cd "$(dirname "$0")"
SHORT=${SHORT:-5000}
LONG=${LONG:-25000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/server" ./cmd/server
go build -o "$tmp/acpbench" ./cmd/acpbench
ev=syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait
ev=$ev,syscalls:sys_enter_nanosleep,raw_syscalls:sys_enter,context-switches
printf '#!/bin/sh\nexec perf stat -x, -e %s -o "$PERF_OUT" -- %s "$@"\n' "$ev" "$tmp/server" >"$tmp/perf-server"
chmod +x "$tmp/perf-server"
for row in "${@:-acprpc:acprpc}"; do
  for n in "$SHORT" "$LONG"; do
    PERF_OUT="$tmp/server-$n" perf stat -x, -e "$ev" -o "$tmp/all-$n" -- \
      "$tmp/acpbench" stdio -server "$tmp/perf-server" -rows "$row" -calls "$n" -runs 1 -seqonly -out "$tmp/out" >/dev/null
  done
  echo "$row: per sequential call ($LONG calls less $SHORT)"
  awk -F, -v calls=$((LONG - SHORT)) '
    /^[0-9]/ {
      name = $3; sub(/.*:/, "", name); sub(/^sys_enter_/, "", name)
      if (name == "sys_enter") name = "every system call"
      if (!(name in seen)) { seen[name] = 1; order[++k] = name }
      v[FILENAME, name] = $1
    }
    END {
      for (i = 1; i <= k; i++) {
        e = order[i]
        all = v[ARGV[2], e] - v[ARGV[1], e]; srv = v[ARGV[4], e] - v[ARGV[3], e]
        printf "  %-18s client %6.2f  server %6.2f\n", e, (all - srv) / calls, srv / calls
      }
    }
  ' "$tmp/all-$SHORT" "$tmp/all-$LONG" "$tmp/server-$SHORT" "$tmp/server-$LONG"
done
