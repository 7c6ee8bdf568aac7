#!/usr/bin/env bash
# Many small proofs (issue 36): the farm from ready witnesses of a 2^LOG test
# key (default 15), 1000 partitions (10 jobs x 100 witnesses) submitted at
# once, with the GPU worker one prove step at a time (gpu_lanes 1, the
# baseline) and then with lanes, in the same run (bench/farm_gpu_bench.py
# prints partitions/s, the GPU worker's busy share, the stages and the
# timeline for each). Then the same for a large key (LARGE, default 22;
# 0 skips it): lanes must not slow it down (a large key's step runs alone).
#   bench/small-proofs.sh [--backend cuda|cpu] [--curve bn128|bls12381] [--log N] [--lanes N]
#                         [--large N] [--jobs N] [--synth-workers N]
# On the H200 machine: ZKFARM_BIN=.gpu/bin LD_LIBRARY_PATH=.gpu/lib bench/small-proofs.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
backend=cuda log=15 lanes=4 large=22 jobs=10 per_job=100 synth=8 curve=bn128 out=${OUT:-$root/build/small-proofs}
while [ $# -gt 0 ]; do
  case $1 in
    --backend) backend=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --lanes) lanes=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --curve) curve=$2; shift 2 ;;
    --synth-workers) synth=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "small-proofs: unknown option $1" >&2; exit 2 ;;
  esac
done
bench() { python3 "$root/bench/farm_gpu_bench.py" --bin "${ZKFARM_BIN:-$root/build/bin}" --backend "$backend" \
  --no-restart --synth-workers "$synth" --curve "$curve" "$@"; }
for l in 1 "$lanes"; do
  bench --log "$log" --jobs "$jobs" --per-job "$per_job" --depth $((2 * l < 32 ? 2 * l : 32)) --lanes "$l" --out "$out/lanes$l"
done
if [ "$large" != 0 ]; then
  for l in 1 "$lanes"; do
    bench --log "$large" --jobs 3 --depth 2 --lanes "$l" --out "$out/large-lanes$l"
  done
fi
