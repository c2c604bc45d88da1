#!/usr/bin/env bash
# Runs every Fuzz* target of the workspace's modules for a while each.
#
#   scripts/fuzz.sh [time per target, default 60s]
#
# Targets are found with `go test -list '^Fuzz' github.com/acpkit/acprpc/...`. When a target finds a
# failing input, go writes it to the package's testdata/fuzz/<Target>/, where
# `go test` replays it from then on; this script lists the new files so they
# can be looked at, fixed and committed as regression seeds.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${1:-60s}"

# Package of each target, in every module of the workspace (./... would
# list the root module's alone): go test -list prints a package's tests,
# then "ok  <import path>".
mapfile -t targets < <(
  go test -list '^Fuzz' github.com/acpkit/acprpc/... | awk '
    /^Fuzz/ { names[n++] = $1; next }
    /^ok / { for (i = 0; i < n; i++) print $2 " " names[i]; n = 0 }'
)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "no Fuzz targets found"
  exit 0
fi

snapshot() { find . -path '*/testdata/fuzz/*' -type f -not -path '*/node_modules/*' | sort; }
before="$(mktemp)"
trap 'rm -f "$before"' EXIT
snapshot >"$before"

failed=()
for t in "${targets[@]}"; do
  pkg="${t% *}"
  name="${t#* }"
  echo "--- $name ($pkg) for $fuzztime"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
    failed+=("$name")
  fi
done

new="$(comm -13 "$before" <(snapshot))"
echo
echo "--- summary: ${#targets[@]} targets, $fuzztime each"
if [ -n "$new" ]; then
  echo "New failing inputs, written in place by go (go test now replays them):"
  echo "$new" | sed 's/^/  /'
  echo "Fix the bug each one shows, then commit the file with the fix."
else
  echo "No new failing inputs."
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "Failed: ${failed[*]}"
  exit 1
fi
