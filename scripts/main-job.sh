#!/usr/bin/env bash
# zkfarm's main job on real input, in one command: sets up (scripts/setup.sh,
# building only the farm's programs: no tests, no CUDA kernels), starts zkfarmd
# on a fresh state dir, submits the 10 witnesses of the circom fixture `chain`
# (a 1000-step multiplication chain and a Poseidon hash, compiled by circom2,
# keyed and witnessed by snarkjs: tests/fixtures/shared) as one job of 10
# partitions, waits for it with a progress bar, verifies all 10 proofs with
# `snarkjs groth16 verify`, and stops the farm.
#   scripts/main-job.sh [FIXTURES_DIR]     (default: tests/fixtures/shared)
# Proofs go to build/main-job/proofs/, the farm's state and log to build/main-job/state/.
# Exits non-zero if any proof fails to verify or the farm does not stop cleanly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fixtures=$(cd "${1:-$root/tests/fixtures/shared}" && pwd)
ZKFARM_BUILD=farm "$root/scripts/setup.sh"
bin=$root/build/bin
work=$root/build/main-job
state=$work/state
out=$work/proofs
rm -rf "$out"
mkdir -p "$work"
snarkjs() { node "$root/node_modules/snarkjs/build/cli.cjs" "$@"; }
ctl() { "$bin/zkfarmctl" --state-dir "$state" "$@"; }

"$bin/zkfarmd" --state-dir "$state" --synth-workers 1 --arena-mib 256 2> "$work/zkfarmd.stderr" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
ctl ready --wait --timeout 60
ctl status

wtns=()
for k in $(seq 0 9); do wtns+=("$fixtures/chain.$k.wtns"); done
job=$(ctl submit --zkey "$fixtures/chain.zkey" --wtns "${wtns[@]}" --out "$out")
echo "submitted job $job: 10 partitions of chain.zkey"
ctl wait "$job" --timeout 600

failed=0
for k in $(seq 0 9); do
  if snarkjs groth16 verify "$fixtures/chain.vkey.json" "$out/$k.public.json" "$out/$k.proof.json" >/dev/null; then
    echo "partition $k: snarkjs groth16 verify: OK"
  else
    echo "partition $k: snarkjs groth16 verify: FAILED"; failed=$((failed + 1))
  fi
done
code=0
ctl stop --wait --wait-timeout 120 || code=$?
wait $daemon || code=$?
trap - EXIT
echo "zkfarmd stopped (exit $code); $((10 - failed)) of 10 proofs verified; proofs in $out"
[ "$failed" -eq 0 ] && [ "$code" -eq 0 ]
