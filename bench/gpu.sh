#!/usr/bin/env bash
# The GPU table of issue 7, on a machine with an NVIDIA GPU, in one command:
#   bench/gpu.sh [OUT]       (table also in OUT/gpu-table.md; default build/gpu-bench)
# Rows: H2D GB/s from the registered arena against pageable memory; the
# odd-coset NTT at 2^20 and 2^22, each with H's preparation (three odd-coset
# NTTs in one call and a·b − c); G1 MSMs of 2^20, 2^22 and 2^24 points with
# the points resident and random scalars; one partition's prove step at
# domains 2^20 and 2^22 (key resident), G2 on the GPU and on the CPU threads,
# and at 2^24 (a 6.5 GB test key made here, G2 on the GPU); 2^22 and 2^24
# again over precomputed MSM tables (--msm-copies 0, issue 18), and each MSM
# row is followed by the same MSM over a table;
# a new backend's key reload at 2^22 (its first proof minus a steady one);
# then BLS12-381 (issue 17): its NTT at 2^22, G1 MSMs of 2^20, 2^22 and 2^24
# points and the prove step at domains 2^20 and 2^22. With $SPPARK_MSM set
# to sppark's BLS12-381 MSM timer (bench/sppark/build.sh builds it from sppark's source),
# sppark's MSM runs on the same points and scalars in the same run. With
# $MSM_WITNESSES set to BN254 .wtns files (bench/make_witness_scalars.sh
# makes a SHA-256 and a Poseidon one; this machine needs no Node.js), each
# adds G1 MSM rows whose scalars are that real witness's values (issue 18).
# Each row has the CPU (all cores, same process) beside it, the ratio, and
# whether both gave the same result. Binaries: $ZKFARM_BIN or build/bin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build/gpu-bench}" && cd "${1:-$root/build/gpu-bench}" && pwd)
bin=${ZKFARM_BIN:-$root/build/bin}
data=$out/keys; mkdir -p "$data"
for log in 20 22 24; do  # a domain of exactly 2^log: constraints + public inputs + 1 ≤ 2^log
  [ -f "$data/d$log.zkey" ] || "$bin/zkfarm-testkey" --constraints $(( (1 << log) - 64 )) --public 2 --seed $log --out "$data/d$log" >/dev/null
  [ "$log" = 24 ] || [ -n "${ZKFARM_BENCH_BN254_ONLY:-}" ] || [ -f "$data/b$log.zkey" ] ||
    "$bin/zkfarm-testkey" --curve bls12381 --constraints $(( (1 << log) - 64 )) --public 2 --seed $log --out "$data/b$log" >/dev/null
done
table=$out/gpu-table.md
{
  echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
  echo "CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%Y-%m-%d)"
  echo
  echo "| what | GPU | CPU | CPU/GPU | results |"
  echo "| --- | ---: | ---: | ---: | --- |"
} >"$table"
run() { "$bin/zkfarm-bench-gpu" "$@" | tee -a "$table"; }
run h2d
run ntt 20
run ntt 22
run msm 20 --check
run msm 22 --check
run msm 24 --check
for w in ${MSM_WITNESSES:-}; do
  for log in 20 22 24; do run msm $log --check --scalars-from "$w"; done
done
run prove "$data/d20.zkey" "$data/d20.wtns" --g2 gpu
run prove "$data/d20.zkey" "$data/d20.wtns" --g2 cpu
run prove "$data/d22.zkey" "$data/d22.wtns" --g2 gpu --reps 3
run prove "$data/d22.zkey" "$data/d22.wtns" --g2 cpu --reps 3
run prove "$data/d24.zkey" "$data/d24.wtns" --g2 gpu --reps 2
run prove "$data/d22.zkey" "$data/d22.wtns" --g2 gpu --reps 3 --msm-copies 0  # over precomputed tables (issue 18)
run prove "$data/d24.zkey" "$data/d24.wtns" --g2 gpu --reps 2 --msm-copies 0
run reload "$data/d22.zkey" "$data/d22.wtns" --reps 3
if [ -z "${ZKFARM_BENCH_BN254_ONLY:-}" ]; then
  run ntt 22 --curve bls12381
  for log in 20 22 24; do
    if [ -n "${SPPARK_MSM:-}" ]; then
      run msm $log --check --curve bls12381 --dump "$out/msm-inputs.bin"
      echo "| $("$SPPARK_MSM" "$out/msm-inputs.bin" $log 2>&1 | head -1) | | | | |" | tee -a "$table"
      rm -f "$out/msm-inputs.bin"
    else
      run msm $log --check --curve bls12381
    fi
  done
  run prove "$data/b20.zkey" "$data/b20.wtns" --g2 gpu
  run prove "$data/b22.zkey" "$data/b22.wtns" --g2 gpu --reps 3
fi
echo; cat "$table"
