#!/usr/bin/env bash
# Witnesses per second from circom inputs (bench/witness_bench.py): circomlib's
# SHA-256 at about 2^16 and 2^20 constraints, snarkjs wtns calculate against
# zkfarm's wasm (wasm2c) and native (circom --c) generators, same inputs, one
# run; every witness checked byte for byte against snarkjs's.
#   bench/witness.sh [--blocks 2,35] [--reps 5] [--work DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/bench/witness_bench.py" --bin "${ZKFARM_BIN:-$root/build/bin}" --src "$root" "$@"
