#!/usr/bin/env bash
# Real circom witnesses for bench/gpu.sh's real-witness MSM rows (issue 18):
#   bench/make_witness_scalars.sh [OUT]     (default build/witness-scalars)
# Compiles bench/sha256_witness.circom (SHA-256 of 1024 bits: a witness of
# bits) and bench/poseidon_witness.circom (64 chained Poseidon hashes: a
# witness of full-size values) with circom2 and circomlib from npm, computes
# each witness with snarkjs from fixed inputs, and writes OUT/sha256.wtns and
# OUT/poseidon.wtns (BN254). Needs Node.js and `npm ci` (scripts/setup does
# both). The GPU machine has no Node.js: make them here and carry them there
# (MSM_WITNESSES="OUT/sha256.wtns OUT/poseidon.wtns" bench/gpu.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build/witness-scalars}" && cd "${1:-$root/build/witness-scalars}" && pwd)
cd "$root"  # circom2 (WebAssembly) reads paths relative to here
rel=$(realpath --relative-to="$root" "$out")
node -e 'let b=[];for(let i=0;i<1024;i++)b.push(String((i*7+3)%5%2));console.log(JSON.stringify({in:b}))' >"$out/sha256.json"
echo '{"in": ["12345678901234567890", "98765432109876543210"]}' >"$out/poseidon.json"
for c in sha256 poseidon; do
  node_modules/.bin/circom2 "bench/${c}_witness.circom" -l node_modules/circomlib/circuits --wasm -o "$rel" >/dev/null
  node node_modules/snarkjs/build/cli.cjs wtns calculate "$out/${c}_witness_js/${c}_witness.wasm" "$out/$c.json" "$out/$c.wtns"
  echo "$out/$c.wtns"
done
