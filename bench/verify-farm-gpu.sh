#!/usr/bin/env bash
# snarkjs over every proof bench/farm-gpu.sh left in OUT (default build/farm-gpu):
#   bench/verify-farm-gpu.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/farm-gpu}
args=(); n=0
for d in "$out"/*/; do
  for j in "$d"job-*/; do
    for p in "$j"*.proof.json; do
      k=${p%.proof.json}
      args+=("$d/vkey.json" "$k.public.json" "$p"); n=$((n + 1))
    done
  done
done
node "$root/tests/snarkjs_verify.cjs" "${args[@]}" >/dev/null
echo "verify-farm-gpu: snarkjs verified all $n proofs in $out"
