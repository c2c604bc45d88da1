# Sourced by the scripts that take figures for the record: with QUIET set,
# waits (polling every 30 s, at most 15 minutes) for a 1-minute load average
# below it.
load1() { cut -d' ' -f1 /proc/loadavg; }
if [[ -n "${QUIET:-}" ]]; then
  for _ in $(seq 30); do
    awk -v l="$(load1)" -v q="$QUIET" 'BEGIN { exit !(l < q) }' && break
    echo "load average $(load1), waiting for it to drop below $QUIET"
    sleep 30
  done
fi
