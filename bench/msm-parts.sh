#!/usr/bin/env bash
# Issue 47: the MSM's terms in parts (ZKFARM_MSM_TERM_BLOCKS, msm_steps.cuh)
# and precomputed tables on a small key (--msm-copies 0), each against the
# baseline (one part a term, no tables) in the same run, on a GPU machine:
#   bench/msm-parts.sh [--log N] [--reps N] [--lanes N] [--blocks N] [--farm] [--out DIR]
# 1. zkfarm-bench-gpu prove, one step alone, BN254 and BLS12-381 keys of
#    domain 2^LOG (default 15): {no tables, tables} x {1 part, parts};
#    prints each median and its ratio to the baseline.
# 2. With --farm: bench/farm_gpu_bench.py from ready witnesses at 1 lane and
#    at --lanes (default 16), BN254, the same four settings.
# Binaries: $ZKFARM_BIN (e.g. the .gpu/bin of scripts/gpu-pack.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log=15 reps=20 lanes=16 blocks=128 farm=0 out=${OUT:-$root/build/msm-parts}
while [ $# -gt 0 ]; do
  case $1 in
    --log) log=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --lanes) lanes=$2; shift 2 ;;
    --blocks) blocks=$2; shift 2 ;;
    --farm) farm=1; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "msm-parts: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=${ZKFARM_BIN:-$root/build/bin}
mkdir -p "$out"
constraints=$(( (1 << log) - 64 ))
# name: copies term_blocks
settings=("base 1 1" "parts 1 $blocks" "tables 0 1" "tables+parts 0 $blocks")

for curve in bn128 bls12381; do
  key=$out/key-$curve-$log
  [ -f "$key.zkey" ] || "$bin/zkfarm-testkey" --curve "$curve" --constraints "$constraints" --public 2 --seed 15 --out "$key" >/dev/null
  base_ms=
  for s in "${settings[@]}"; do
    read -r name copies tb <<<"$s"
    # The bench exits 1 when its proof differs from the CPU's: said below, not fatal here.
    line=$(ZKFARM_MSM_TERM_BLOCKS=$tb "$bin/zkfarm-bench-gpu" prove "$key.zkey" "$key.wtns" --reps "$reps" \
           --msm-copies "$copies" 2>&1 | tee "$out/step-$curve-$name.txt" | grep -E 'prove step' | tail -1 || true)
    if [ -z "$line" ]; then echo "msm-parts: $curve $name: no result (see $out/step-$curve-$name.txt)"; continue; fi
    # "| CURVE prove step … | GPU ms | CPU ms | ratio | identical proofs |"
    ms=$(awk -F'|' '{ gsub(/[ a-z]/, "", $3); print $3 }' <<<"$line")
    grep -q "identical proofs" <<<"$line" || echo "msm-parts: $curve $name: the GPU's proof differs from the CPU's: $line"
    [ -n "$base_ms" ] || base_ms=$ms
    printf 'step %-9s 2^%s %-13s %8s ms  %s x baseline\n' "$curve" "$log" "$name" "$ms" \
      "$(awk -v a="$base_ms" -v b="$ms" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')"
  done
done

if [ "$farm" = 1 ]; then
  for l in 1 "$lanes"; do
    for s in "${settings[@]}"; do
      read -r name copies tb <<<"$s"
      ZKFARM_MSM_TERM_BLOCKS=$tb python3 "$root/bench/farm_gpu_bench.py" --bin "$bin" --backend cuda --no-restart \
        --synth-workers 12 --log "$log" --jobs 20 --per-job 100 --depth $((2 * l < 32 ? 2 * l : 32)) --lanes "$l" \
        --msm-copies "$copies" --out "$out/farm-lanes$l-$name" > "$out/farm-lanes$l-$name.txt" 2>&1 || true
      echo "farm lanes $l $name: $(grep -E 'partitions/s' "$out/farm-lanes$l-$name.txt" | head -2 | tr -s ' ' | tr '\n' ';')"
    done
  done
fi
