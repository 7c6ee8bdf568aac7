#!/usr/bin/env bash
# Each curve's constants live in its own file (issue 17): this fails when a
# prime of BN254 or BLS12-381 (in 64-bit limbs, 32-bit limbs or decimal)
# appears in production code anywhere else. Tests, fuzz seeds and the Python
# references keep their own independent copies on purpose and are not checked.
#   scripts/check-curve-constants.sh        (run by ctest as curve_constants)
# The CUDA field code takes its 32-bit words from the same files at compile
# time (gpu_worker/cuda/dfield.cuh, DLimbs), so it has no exception.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
production=(groth16 gpu_worker supervisor synth_worker worker_kit protocol shm tools testkey witgen api ctl files bench)
fail=0
check() {  # NAME OWN-FILE PATTERN [ALLOWED...]
  local name=$1 own=$2 pattern=$3
  shift 3
  local hits
  hits=$(grep -rlniE "$pattern" "${production[@]}" 2>/dev/null | grep -v -x -F "$own" || true)
  for allowed in "$@"; do hits=$(printf '%s\n' "$hits" | grep -v -x -F "$allowed" || true); done
  if [ -n "$hits" ]; then
    echo "check-curve-constants: $name constants outside $own:" >&2
    printf '  %s\n' $hits >&2
    fail=1
  fi
}
# BN254: the top limb both primes share (0x30644e72…), either limb width, and
# the decimal digits both begin with.
check BN254 groth16/bn254.hpp '30644e72|21888242871839275222246405745257275088'
# BLS12-381: q's and r's top limbs, and q's and r's leading decimal digits.
check BLS12-381 groth16/bls12_381.hpp \
  '1a0111ea|397fe69a|73eda753|299d7d48|4002409555221667393417789825735904156556882819939007885332|5243587517512619047944774050818596583769055250052763782260365869993858118451'
[ "$fail" = 0 ] && echo "check-curve-constants: each curve's primes appear only in its own file"
exit "$fail"
