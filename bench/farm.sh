#!/usr/bin/env bash
# The farm against sequential zkfarm-prove on the same 10 partitions, in one run
# (bench/farm_bench.py); prints the ratio and zkfarmctl status latency.
#   bench/farm.sh [REPS]                 a 2^16-constraint test key, 10 witnesses (bench/make_keys.sh)
#   ZKEY=… WTNS="…" bench/farm.sh [REPS]  another key and witnesses
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ZKEY:-}" ]; then
  "$root/bench/make_keys.sh" 16
  d=$root/build/bench-data
  ZKEY=$d/tk16.zkey WTNS="$d/tk16.wtns $(echo "$d"/tk16.{1,2,3,4,5,6,7,8,9}.wtns)"
fi
# shellcheck disable=SC2086
exec python3 "$root/bench/farm_bench.py" --bin "$root/build/bin" --zkey "$ZKEY" --wtns $WTNS --reps "${1:-3}"
