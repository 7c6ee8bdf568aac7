#!/usr/bin/env bash
# The CUDA backend against the CPU backend, on a machine with an NVIDIA GPU:
#   scripts/gpu-check.sh [OUT]          check; proofs kept in OUT (default build/gpu-check)
#   scripts/gpu-check.sh --verify TAR   on a machine with Node.js: snarkjs verifies them
# 1. Binaries: $ZKFARM_BIN if set (e.g. the .gpu/bin of scripts/gpu-pack.sh, with
#    LD_LIBRARY_PATH=.gpu/lib), else a release build here (nvcc needed).
# 2. zkfarm_gpu_tests: fields, domain tables, NTT, MSMs and the constraint
#    matrix's device build on the GPU against the CPU (the matrix also for the
#    2^20 test key below).
# 3. Every witness of the edge-case circuits (tests/fixtures), of the shared
#    fixtures ($ZKFARM_FIXTURES, default tests/fixtures/shared: BN254's chain
#    and tiny, BLS12-381's chain_bls12381) and of test keys with domains 2^16
#    and 2^20 (zkfarm-testkey; BLS12-381 at 2^16 too) is proved by both
#    backends with one fixed blinding (--test-blinding): proof.json must be
#    byte-identical, from the CPU and from CUDA with G2 on the GPU, with G2 on
#    the CPU threads, and over precomputed MSM tables (--msm-copies 0).
# 4. OUT/proofs.tar.gz holds each proof, public.json and vkey for --verify.
# Exit 0 when every check passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = "--verify" ]; then
  [ -f "${2:-}" ] || { echo "usage: scripts/gpu-check.sh --verify PROOFS.tar.gz" >&2; exit 2; }
  tar=$(realpath "$2"); dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
  tar -xzf "$tar" -C "$dir"
  n=0
  for proof in "$dir"/*.proof.json; do
    base=${proof%.proof.json}; key=$(basename "$base"); key=${key%.*}
    result=$(node "$root/node_modules/snarkjs/build/cli.cjs" groth16 verify "$dir/$key.vkey.json" "$base.public.json" "$proof" 2>&1 || true)
    case $result in
      *"OK!"*) n=$((n + 1)) ;;
      *) echo "FAIL: $(basename "$proof") does not verify: $result" >&2; exit 1 ;;
    esac
  done
  echo "gpu-check: snarkjs verified all $n CUDA-backend proofs"
  exit 0
fi

out=$(mkdir -p "${1:-$root/build/gpu-check}" && cd "${1:-$root/build/gpu-check}" && pwd)
bin=${ZKFARM_BIN:-}
if [ -z "$bin" ]; then
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j"$(nproc)" --target zkfarm-prove zkfarm-testkey zkfarm_gpu_tests
  bin=$root/build/bin
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no answer"

fixtures=${ZKFARM_FIXTURES:-$root/tests/fixtures/shared}
export ZKFARM_SHARED_FIXTURES=$fixtures  # the GPU tests read chain and tiny from there
export ZKFARM_SOURCE_DIR=$root           # …and the edge-case keys (tests/fixtures) from this checkout
echo "== kernels against the CPU (zkfarm_gpu_tests)"
mkdir -p "$out"
if ! "$bin/zkfarm_gpu_tests" >"$out/gpu_tests.log" 2>&1; then
  grep -E "Failure|FAILED|Expected|Which is|error" "$out/gpu_tests.log" | head -40 >&2; echo "FAIL: zkfarm_gpu_tests" >&2; exit 1
fi
grep -E "^\[  (PASSED|SKIPPED) " "$out/gpu_tests.log"
if grep -q "SKIPPED \]" "$out/gpu_tests.log"; then echo "FAIL: GPU tests skipped: no usable device" >&2; exit 1; fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; mkdir -p "$work/proofs"
echo "== test keys with domains 2^16 and 2^20 (zkfarm-testkey)"
for log in 16 20; do
  "$bin/zkfarm-testkey" --constraints $(( (1 << log) - 64 )) --public 3 --witnesses 1 --seed $log --out "$work/tk$log" >/dev/null
done
"$bin/zkfarm-testkey" --curve bls12381 --constraints $(( (1 << 16) - 64 )) --public 3 --witnesses 1 --seed 316 \
  --out "$work/tkbls16" >/dev/null
echo "== the 2^20 test key's constraint matrix built on the device (its own record order and shuffled)"
if ! ZKFARM_GPU_TEST_ZKEY=$work/tk20.zkey "$bin/zkfarm_gpu_tests" --gtest_filter='Gpu.DeviceMatrixBuild*' >"$out/gpu_matrix.log" 2>&1; then
  grep -E "Failure|FAILED|Expected|error" "$out/gpu_matrix.log" | head -20 >&2; echo "FAIL: device matrix of the 2^20 key" >&2; exit 1
fi
grep -E "^\[  PASSED " "$out/gpu_matrix.log"

# Below both curves' r (BN254's r < BLS12-381's r).
blinding=1234567890123456789012345678901234567890,98765432109876543210987654321098765432109876543210
fails=0; count=0
prove_both() {  # KEY WTNS NAME; a prover that fails counts as a difference, the check goes on
  local key=$1 wtns=$2 name=$3 kname
  kname=$(basename "$key" .zkey)
  rm -f "$work/cpu.json" "$work/g2cpu.json" "$work/tables.json"
  count=$((count + 1))
  if "$bin/zkfarm-prove" --backend cpu --test-blinding "$blinding" "$key" "$wtns" "$work/cpu.json" "$work/cpu.public.json" &&
     "$bin/zkfarm-prove" --backend cuda --test-blinding "$blinding" "$key" "$wtns" "$work/proofs/$name.proof.json" "$work/proofs/$name.public.json" &&
     "$bin/zkfarm-prove" --backend cuda --g2 cpu --test-blinding "$blinding" "$key" "$wtns" "$work/g2cpu.json" "$work/g2cpu.public.json" &&
     "$bin/zkfarm-prove" --backend cuda --msm-copies 0 --test-blinding "$blinding" "$key" "$wtns" "$work/tables.json" "$work/tables.public.json" &&
     cmp -s "$work/cpu.json" "$work/proofs/$name.proof.json" && cmp -s "$work/cpu.json" "$work/g2cpu.json" &&
     cmp -s "$work/cpu.json" "$work/tables.json" &&
     cmp -s "$work/cpu.public.json" "$work/proofs/$name.public.json"; then
    echo "identical  $name"
  else
    echo "DIFFERENT  $name"; fails=$((fails + 1))
  fi
  local vkey=${key%.zkey}.vkey.json
  cp "$vkey" "$work/proofs/$kname.vkey.json"
}
echo "== CUDA backend against CPU backend, same blinding"
for key in "$root"/tests/fixtures/*.zkey "$fixtures"/chain.zkey "$fixtures"/tiny.zkey "$fixtures"/chain_bls12381.zkey \
           "$work"/tk16.zkey "$work"/tk20.zkey "$work"/tkbls16.zkey; do
  [ -f "$key" ] || { echo "missing $key" >&2; fails=$((fails + 1)); continue; }
  k=$(basename "$key" .zkey)
  for wtns in "$(dirname "$key")/$k".*.wtns "$(dirname "$key")/$k.wtns"; do
    [ -f "$wtns" ] || continue
    w=$(basename "$wtns" .wtns); idx=${w#"$k"}; idx=${idx#.}
    prove_both "$key" "$wtns" "$k.${idx:-0}"
  done
done
tar -czf "$out/proofs.tar.gz" -C "$work/proofs" .
echo "gpu-check: $((count - fails)) of $count proofs byte-identical between the backends; proofs in $out/proofs.tar.gz"
[ "$fails" -eq 0 ]
