#!/usr/bin/env bash
# Runs the long soak and prints its report.
#
#   scripts/soak.sh [top-level requests, default 1000000]
#
# SOAK_RACE=0 runs it without the race detector (several times faster).
set -euo pipefail
cd "$(dirname "$0")/.."

requests="${1:-1000000}"
race=(-race)
if [ "${SOAK_RACE:-1}" = "0" ]; then
  race=()
fi

cmd=(go test "${race[@]}" -run '^TestSoak$' -count=1 -v -timeout 120m . -soak.requests="$requests")
echo "${cmd[*]}"
start=$(date +%s)
status=0
out="$("${cmd[@]}" 2>&1)" || status=$?
end=$(date +%s)

# The report is the test's log; anything else is shown when the soak fails.
echo "$out" | sed -n 's/^ *stress_test\.go:[0-9]*: //p'
if [ "$status" -ne 0 ]; then
  echo "$out"
  echo "soak FAILED after $((end - start))s"
  exit "$status"
fi
echo "soak passed in $((end - start))s (wall clock, build included)"
