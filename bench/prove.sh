#!/usr/bin/env bash
# zkfarm-prove against `snarkjs groth16 prove` on the same key and witness, in one
# run: median wall time of REPS interleaved runs, peak memory, speed-up; both
# proofs are then checked with snarkjs groth16 verify.
#   bench/prove.sh [REPS]            a 2^16-constraint test key (made on first use
#                                    by bench/make_keys.sh with zkfarm-testkey, cached)
#   CURVE=bls12381 bench/prove.sh [REPS]   the same over BLS12-381
#   ZKEY=… WTNS=… VKEY=… bench/prove.sh [REPS]   any other key and witness
# Needs scripts/setup.sh to have run (build/ and node_modules/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${1:-5}
if [ -z "${ZKEY:-}" ]; then
  "$root/bench/make_keys.sh" 16
  data=$root/build/bench-data
  suffix=$([ "${CURVE:-bn128}" = bn128 ] && echo "" || echo "-$CURVE")
  ZKEY=$data/tk16$suffix.zkey WTNS=$data/tk16$suffix.wtns VKEY=$data/tk16$suffix.vkey.json
fi
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
snarkjs=(node "$root/node_modules/snarkjs/build/cli.cjs")
echo "key $(basename "$ZKEY"): $(stat -c %s "$ZKEY") bytes; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
python3 "$root/bench/compare.py" --reps "$reps" ${JSON_OUT:+--json "$JSON_OUT"} \
  --label snarkjs -- "${snarkjs[@]}" groth16 prove "$ZKEY" "$WTNS" "$out/s.proof.json" "$out/s.public.json" \
  --label zkfarm -- "$root/build/bin/zkfarm-prove" "$ZKEY" "$WTNS" "$out/z.proof.json" "$out/z.public.json"
for who in s z; do
  "${snarkjs[@]}" groth16 verify "$VKEY" "$out/$who.public.json" "$out/$who.proof.json" >/dev/null \
    || { echo "bench: the $who proof does not verify" >&2; exit 1; }
done
echo "both proofs verify with snarkjs groth16 verify"
