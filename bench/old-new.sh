#!/usr/bin/env bash
# zkfarm-prove of another build (OLD, e.g. the commit before a change) against
# this build's, same keys and witnesses, interleaved in one run (bench/compare.py):
#   bench/old-new.sh OLD_ZKFARM_PROVE [REPS] [LOG ...]     (default 5 reps, 16 18)
# Build the old one in a worktree: git worktree add /tmp/old COMMIT &&
#   cmake -S /tmp/old -B /tmp/old/build -DZKFARM_CUDA=OFF -DCMAKE_BUILD_TYPE=Release &&
#   cmake --build /tmp/old/build --target zkfarm-prove
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$1; reps=${2:-5}; shift $(( $# >= 2 ? 2 : 1 ))
logs=("$@"); [ ${#logs[@]} -gt 0 ] || logs=(16 18)
"$root/bench/make_keys.sh" "${logs[@]}"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for log in "${logs[@]}"; do
  d=$root/build/bench-data/tk$log
  echo "== 2^$log constraints, $(nproc) cores"
  python3 "$root/bench/compare.py" --reps "$reps" \
    --label old -- "$old" --backend cpu "$d.zkey" "$d.wtns" "$out/o.json" "$out/op.json" \
    --label new -- "$root/build/bin/zkfarm-prove" --backend cpu "$d.zkey" "$d.wtns" "$out/n.json" "$out/np.json"
done
