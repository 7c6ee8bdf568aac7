#!/usr/bin/env bash
# Builds the benchmark circuit's artifacts on demand (they are large, so not committed):
#   bench/make_circuit.sh [CACHE_DIR]      (default: build/bench-data under the repo root)
# Writes into CACHE_DIR: bench16.r1cs, bench16_js/ (witness wasm), pot17_bn128.ptau (a 2^17
# powers-of-tau, prepared for phase 2, reused when present), bench16.zkey, bench16.vkey.json,
# bench16.0.wtns (from bench/circuits/bench16.inputs/p0.json) and a snarkjs reference proof
# bench16.0.proof.json / bench16.0.public.json, which is verified.
# Idempotent: does nothing when bench16.zkey, bench16.0.wtns and bench16.vkey.json exist
# (delete them, or set FORCE=1, to rebuild). Prints the time each step took.
# Needs node and the repo's node_modules (`npm install` at the repo root), or NODE_MODULES=path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-$root/build/bench-data}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
name=bench16
power=17
src=$root/bench/circuits/$name.circom
input=$root/bench/circuits/$name.inputs/p0.json
nm=$(realpath "${NODE_MODULES:-$root/node_modules}")
if [ -z "${FORCE:-}" ] && [ -f "$cache/$name.zkey" ] && [ -f "$cache/$name.0.wtns" ] && [ -f "$cache/$name.vkey.json" ]; then
  echo "$cache: $name artifacts present, nothing to do"
  exit 0
fi
[ -f "$nm/snarkjs/build/cli.cjs" ] && [ -f "$nm/circom2/cli.js" ] \
  || { echo "missing snarkjs/circom2 in $nm (run npm install at the repo root)" >&2; exit 1; }
snarkjs() { node --max-old-space-size=8192 "$nm/snarkjs/build/cli.cjs" "$@"; }
# circom2 (WASI) only resolves include paths below its working directory.
circom() { (cd "$nm/.." && node "$nm/circom2/cli.js" "$@" -l node_modules); }
total_start=$(date +%s.%N)
exec 3>&1  # step timings go to the original stdout even when a step's output is discarded
step() {  # step LABEL command...: runs it, prints its wall time
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@"
  t1=$(date +%s.%N)
  awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "%-28s %8.1f s\n", l, b - a }' >&3
}
tmp=$(mktemp -d "$cache/.tmp.XXXXXX"); trap 'rm -rf "$tmp"' EXIT

step "circom compile" circom "$src" --r1cs --wasm -p bn128 -o "$tmp" >/dev/null
mv "$tmp/$name.r1cs" "$cache/$name.r1cs"
rm -rf "$cache/${name}_js"; mv "$tmp/${name}_js" "$cache/${name}_js"
snarkjs r1cs info "$cache/$name.r1cs" | sed 's/\x1b\[[0-9;]*m//g; s/^.*snarkJS: //'

ptau=$cache/pot${power}_bn128.ptau
if [ ! -f "$ptau" ]; then
  step "powersoftau new" snarkjs powersoftau new bn128 $power "$tmp/0.ptau" >/dev/null
  step "powersoftau contribute" snarkjs powersoftau contribute "$tmp/0.ptau" "$tmp/1.ptau" \
    --name=bench -e="zkfarm bench entropy" >/dev/null
  rm -f "$tmp/0.ptau"
  step "powersoftau prepare phase2" snarkjs powersoftau prepare phase2 "$tmp/1.ptau" "$tmp/final.ptau" >/dev/null
  mv "$tmp/final.ptau" "$ptau"
else
  echo "reusing $ptau"
fi

step "groth16 setup" snarkjs groth16 setup "$cache/$name.r1cs" "$ptau" "$tmp/0.zkey" >/dev/null
step "zkey contribute" snarkjs zkey contribute "$tmp/0.zkey" "$tmp/1.zkey" --name=bench -e="zkfarm bench key" >/dev/null
step "export verificationkey" snarkjs zkey export verificationkey "$tmp/1.zkey" "$tmp/vkey.json" >/dev/null
step "wtns calculate" snarkjs wtns calculate "$cache/${name}_js/$name.wasm" "$input" "$tmp/0.wtns"
step "groth16 prove (snarkjs)" snarkjs groth16 prove "$tmp/1.zkey" "$tmp/0.wtns" "$tmp/proof.json" "$tmp/public.json"
step "groth16 verify" snarkjs groth16 verify "$tmp/vkey.json" "$tmp/public.json" "$tmp/proof.json" >/dev/null
# Publish only complete, checked artifacts (so an interrupted run is redone next time).
mv "$tmp/proof.json" "$cache/$name.0.proof.json"
mv "$tmp/public.json" "$cache/$name.0.public.json"
mv "$tmp/vkey.json" "$cache/$name.vkey.json"
mv "$tmp/0.wtns" "$cache/$name.0.wtns"
mv "$tmp/1.zkey" "$cache/$name.zkey"
awk -v a="$total_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%-28s %8.1f s\n", "total", b - a }'
echo "done: $cache"
