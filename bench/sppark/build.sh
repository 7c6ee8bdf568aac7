#!/usr/bin/env bash
# Builds sppark's BLS12-381 G1 MSM timer (bench/sppark/sppark_msm_bls.cu), the
# baseline bench/gpu.sh runs beside zkfarm's MSM through $SPPARK_MSM:
#   bench/sppark/build.sh SPPARK_DIR BLST_DIR [OUT]   (OUT default .sppark/bin/sppark_msm_bls)
# SPPARK_DIR, BLST_DIR: source trees of github.com/supranational/sppark and
# .../blst (neither is a Debian package; fetch them where the network allows,
# e.g. `git clone`). Measured 2026-12-03 with sppark 17278d7 and blst dece82e.
# Needs nvcc (sm_90 code for the H100/H200); the binary links the CUDA runtime
# statically and needs an NVIDIA driver ≥ 580 (CUDA 13) where it runs.
# Input: `zkfarm-bench-gpu msm LOG --curve bls12381 --dump FILE` writes it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/sppark/build.sh SPPARK_DIR BLST_DIR [OUT]" >&2; exit 2; }
sppark=$(cd "$1" && pwd); blst=$(cd "$2" && pwd)
out=${3:-$root/.sppark/bin/sppark_msm_bls}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
mkdir -p "$(dirname "$out")"
(cd "$blst" && ./build.sh -D__BLST_PORTABLE__ >/dev/null)
"$nvcc" -O3 -std=c++17 -arch=sm_90 -Xcompiler -static-libstdc++ -I"$sppark" -I"$blst/src" -o "$out" \
  "$root/bench/sppark/sppark_msm_bls.cu" "$sppark/util/all_gpus.cpp" "$blst/libblst.a"
echo "built $out"
