#!/usr/bin/env bash
# The farm against sequential zkfarm-prove on the same 10 partitions, in one run
# (bench/farm_bench.py); prints the ratio and zkfarmctl status latency.
#   bench/farm.sh [REPS]                 the 2^16-constraint bench circuit (bench/make_circuit.sh)
#   ZKEY=… WTNS="…" bench/farm.sh [REPS]  another key and witnesses
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ZKEY:-}" ]; then
  "$root/bench/make_circuit.sh" >&2
  ZKEY=$root/build/bench-data/bench16.zkey WTNS=$root/build/bench-data/bench16.0.wtns
fi
# shellcheck disable=SC2086
exec python3 "$root/bench/farm_bench.py" --bin "$root/build/bin" --zkey "$ZKEY" --wtns $WTNS --reps "${1:-3}"
