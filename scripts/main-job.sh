#!/usr/bin/env bash
# zkfarm's main job on real input: sets up (scripts/setup.sh), proves every
# witness of the shared circom/snarkjs fixtures with zkfarm-prove, and verifies
# each proof with `snarkjs groth16 verify`.
#   scripts/main-job.sh [FIXTURES_DIR]     (default: ../shared/fixtures)
# Proofs go to build/main-job/. Exits non-zero if any proof fails to verify.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fixtures=$(cd "${1:-$root/../shared/fixtures}" && pwd)
"$root/scripts/setup.sh"
out=$root/build/main-job
mkdir -p "$out"
snarkjs() { node "$root/node_modules/snarkjs/build/cli.cjs" "$@"; }

proved=0 failed=0
for wtns in "$fixtures"/*.wtns; do
  base=$(basename "$wtns" .wtns)   # NAME.K
  name=${base%.*}
  [ -f "$fixtures/$name.zkey" ] || continue
  case "$name" in *bls12381*) continue ;; esac  # zkfarm proves BN254 (bn128) keys
  start=$(date +%s%N)
  "$root/build/bin/zkfarm-prove" "$fixtures/$name.zkey" "$wtns" "$out/$base.proof.json" "$out/$base.public.json"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if snarkjs groth16 verify "$fixtures/$name.vkey.json" "$out/$base.public.json" "$out/$base.proof.json" >/dev/null; then
    printf '%-12s proved in %5d ms, snarkjs groth16 verify: OK\n' "$base" "$ms"
    proved=$((proved + 1))
  else
    printf '%-12s proved in %5d ms, snarkjs groth16 verify: FAILED\n' "$base" "$ms"
    failed=$((failed + 1))
  fi
done
echo "$proved proofs verified, $failed failed (proofs in $out)"
[ "$failed" -eq 0 ] && [ "$proved" -gt 0 ]
