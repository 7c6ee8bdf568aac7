#!/usr/bin/env bash
# The farm end to end with the CUDA backend, on a machine with an NVIDIA GPU:
#   scripts/gpu-farm.sh [OUT]     (default build/gpu-farm)
# Makes a test key with a 2^20 domain and 10 witnesses (zkfarm-testkey), starts
# zkfarmd with --backend cuda (one GPU worker per device, the arena pinned),
# submits one job of 10 partitions, waits, checks that the GPU workers proved
# it with the cuda backend, stops the farm, and leaves the proofs with the
# vkey in OUT/farm-proofs.tar.gz for `scripts/gpu-check.sh --verify` (snarkjs)
# on a machine with Node.js. Binaries: $ZKFARM_BIN or build/bin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build/gpu-farm}" && cd "${1:-$root/build/gpu-farm}" && pwd)
bin=${ZKFARM_BIN:-$root/build/bin}
log=${LOG:-20}              # domain 2^LOG
backend=${BACKEND:-cuda}    # BACKEND=cpu tries the script where there is no GPU
work=$(mktemp -d); state=$work/state; proofs=$work/proofs
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
ctl() { "$bin/zkfarmctl" --state-dir "$state" "$@"; }
"$bin/zkfarm-testkey" --constraints $(( (1 << log) - 64 )) --public 2 --witnesses 9 --seed 2020 --out "$work/tk"

"$bin/zkfarmd" --state-dir "$state" --backend "$backend" --synth-workers 2 2> "$out/zkfarmd.stderr" &
daemon=$!
for _ in $(seq 1 200); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
ctl status | tee "$out/status-start.txt"
wtns=("$work/tk.wtns")
for k in $(seq 1 9); do wtns+=("$work/tk.$k.wtns"); done
t0=$(date +%s%N)
job=$(ctl submit --zkey "$work/tk.zkey" --wtns "${wtns[@]}" --out "$proofs")
ctl wait "$job" --timeout 500
t1=$(date +%s%N)
ctl status | tee "$out/status-end.txt"
ctl jobs | tee "$out/jobs.txt" || true
ctl stop
code=0; wait "$daemon" || code=$?; daemon=
mkdir -p "$work/tar"
for k in $(seq 0 9); do
  cp "$proofs/$k.proof.json" "$work/tar/tk.$k.proof.json"
  cp "$proofs/$k.public.json" "$work/tar/tk.$k.public.json"
done
cp "$work/tk.vkey.json" "$work/tar/tk.vkey.json"
tar -czf "$out/farm-proofs.tar.gz" -C "$work/tar" .
grep -Eq "^gpu-[0-9]+ +gpu .* $backend " "$out/status-end.txt" || { echo "FAIL: no worker on the cuda backend" >&2; exit 1; }
echo "gpu-farm: 10 partitions of a 2^$log-domain key in $(( (t1 - t0) / 1000000 )) ms; zkfarmd exit $code; proofs in $out/farm-proofs.tar.gz"
[ "$code" -eq 0 ]
