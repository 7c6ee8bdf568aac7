#!/usr/bin/env bash
# Test keys for the benchmarks, made once with zkfarm-testkey and cached:
#   bench/make_keys.sh LOG [LOG ...]     e.g. 12 16 18
#   CURVE=bls12381 bench/make_keys.sh LOG    the same over BLS12-381
# For each LOG: build/bench-data/tkLOG.{r1cs,zkey,vkey.json,wtns} (BLS12-381:
# tkLOG-bls12381.*) and 9 more witnesses tkLOG.1.wtns … tkLOG.9.wtns, for a
# circuit of 2^LOG constraints and 2 public inputs (so the domain is
# 2^(LOG+1)). INSECURE keys: benchmarks only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/build/bench-data
mkdir -p "$data"
curve=${CURVE:-bn128}
suffix=$([ "$curve" = bn128 ] && echo "" || echo "-$curve")
for log in "$@"; do
  prefix=$data/tk$log$suffix
  if [ -f "$prefix.zkey" ] && [ -f "$prefix.9.wtns" ] && [ -f "$prefix.vkey.json" ]; then continue; fi
  echo "bench: making a 2^$log-constraint test key in $prefix.zkey" >&2
  "$root/build/bin/zkfarm-testkey" --constraints $((1 << log)) --public 2 --witnesses 9 --seed "$log" --curve "$curve" --out "$prefix" >&2
done
