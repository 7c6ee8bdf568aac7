#!/usr/bin/env bash
# All of zkfarm's benchmarks behind one entry point, ending in a short table:
#   bench/run.sh [REPS]       (default 3; after scripts/setup.sh)
#  1. zkfarm-prove against `snarkjs groth16 prove`, same key and witness, same
#     run, for test keys of 2^12, 2^16 and 2^18 constraints (bench/prove.sh);
#  2. the farm against sequential zkfarm-prove, 10 partitions at 2^16 (bench/farm.sh);
#  3. on a machine with an NVIDIA GPU and the CUDA backend built, bench/gpu.sh's
#     table (issue 7; skipped where there is none).
# Keys are made once by zkfarm-testkey into build/bench-data (bench/make_keys.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${1:-3}
sizes=(12 16 18)
"$root/bench/make_keys.sh" "${sizes[@]}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for log in "${sizes[@]}"; do
  d=$root/build/bench-data/tk$log
  echo "== 2^$log constraints: zkfarm-prove against snarkjs groth16 prove"
  JSON_OUT=$tmp/prove$log.json ZKEY=$d.zkey WTNS=$d.wtns VKEY=$d.vkey.json "$root/bench/prove.sh" "$reps"
done
echo "== the farm against sequential zkfarm-prove"
"$root/bench/farm.sh" "$reps" | tee "$tmp/farm.txt"
if [ -x "$root/bench/gpu.sh" ] && command -v nvidia-smi >/dev/null 2>&1; then
  echo "== GPU"
  "$root/bench/gpu.sh"
fi

echo
echo "== summary ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d))"
python3 - "$tmp" "${sizes[@]}" <<'PY'
import json, sys
tmp, sizes = sys.argv[1], sys.argv[2:]
print(f"{'constraints':<12} {'snarkjs s':>10} {'zkfarm s':>9} {'speed-up':>9} {'snarkjs MiB':>12} {'zkfarm MiB':>11}")
for log in sizes:
    r = json.load(open(f"{tmp}/prove{log}.json"))
    s, z = r["snarkjs"], r["zkfarm"]
    print(f"{'2^' + log:<12} {s['median_s']:10.3f} {z['median_s']:9.3f} {s['median_s'] / z['median_s']:8.2f}x "
          f"{s['peak_mib']:12.1f} {z['peak_mib']:11.1f}")
for line in open(f"{tmp}/farm.txt"):
    if line.startswith("farm / sequential") or line.startswith("zkfarmctl status"):
        print(line.rstrip())
PY
