#!/usr/bin/env bash
# Keep-the-GPU-busy benchmark (bench/farm_gpu_bench.py): 100 partitions
# (10 jobs x 10 distinct witnesses) of 2^20- and 2^22-domain test keys through
# zkfarmd; partitions/s, the GPU's busy share, stages, timeline, ratio to the
# compute bound, host-to-device bytes a partition.
#   bench/farm-gpu.sh [--backend cuda|cpu] [--log N ...] [--depth D] [--out DIR]
# On the H200 machine: ZKFARM_BIN=.gpu/bin LD_LIBRARY_PATH=.gpu/lib bench/farm-gpu.sh
# Anywhere: bench/farm-gpu.sh --backend cpu --log 16 (also prints farm/sequential).
# The proofs land in OUT/LOG/job-J with OUT/LOG/vkey.json; check them with
# bench/verify-farm-gpu.sh OUT on a machine with Node.js.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/bench/farm_gpu_bench.py" --bin "${ZKFARM_BIN:-$root/build/bin}" "$@"
