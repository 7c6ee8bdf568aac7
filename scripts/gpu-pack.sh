#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh, bench/gpu.sh and scripts/gpu-farm.sh need
# on a GPU machine that cannot build zkfarm itself (no Boost, ZeroMQ, … there:
# the lent H200 machine has CUDA but not Debian's packages):
#   scripts/gpu-pack.sh [DIR]     (default .gpu, ignored by git)
# Builds in $ZKFARM_GPU_BUILD (default build/) with the CUDA backend on.
# DIR/bin: the release binaries (CUDA backend built: nvcc must be here);
# DIR/lib: the shared libraries they use beyond glibc and libstdc++;
# DIR/fixtures: the circom/snarkjs fixtures (tests/fixtures/shared).
# On the GPU machine: ZKFARM_BIN=DIR/bin LD_LIBRARY_PATH=DIR/lib; for DIR/bin/zkfarm_gpu_tests
# also ZKFARM_SHARED_FIXTURES=DIR/fixtures and ZKFARM_SOURCE_DIR=the checkout there
# (the edge-case fixtures, tests/fixtures/*.zkey, are read from it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.gpu}
if [ -e "$out" ] && [ ! -f "$out/.zkfarm-gpu-pack" ]; then
  echo "gpu-pack: $out exists and is not an earlier pack; refusing to replace it" >&2; exit 2
fi
build=${ZKFARM_GPU_BUILD:-$root/build}
# -U: the CUDA architectures' default list (a test build has PTX only).
configure=$(cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZKFARM_CUDA=ON -UZKFARM_CUDA_ARCHS)
case $configure in
  *"zkfarm: CUDA backend ON"*) ;;
  *) echo "gpu-pack: the build has no CUDA backend (nvcc not found, or -DZKFARM_CUDA=OFF)" >&2; exit 2 ;;
esac
cmake --build "$build" -j"$(nproc)" --target zkfarm-prove zkfarm-gpu zkfarm-synth zkfarmd zkfarmctl \
  zkfarm-testkey zkfarm_gpu_tests zkfarm-bench-gpu
cmake -DSRC="$root" -DDIR="$build/bin" -P "$root/version/stamp.cmake"  # their --version's commit
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/fixtures"
touch "$out/.zkfarm-gpu-pack"
for b in zkfarm-prove zkfarm-gpu zkfarm-synth zkfarmd zkfarmctl zkfarm-testkey zkfarm_gpu_tests zkfarm-bench-gpu; do
  cp "$build/bin/$b" "$out/bin/"
  strip "$out/bin/$b"
done
ldd "$out"/bin/* 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
fx=${ZKFARM_SHARED_FIXTURES:-$root/tests/fixtures/shared}
cp "$fx"/chain.zkey "$fx"/chain.vkey.json "$fx"/chain.[0-9].wtns "$fx"/tiny.zkey "$fx"/tiny.vkey.json "$fx"/tiny.[0-9].wtns \
  "$fx"/chain_bls12381.zkey "$fx"/chain_bls12381.vkey.json "$fx"/chain_bls12381.[0-9].wtns "$out/fixtures/"
du -sh "$out"
