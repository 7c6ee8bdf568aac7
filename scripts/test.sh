#!/usr/bin/env bash
# Runs zkfarm's tests: sets up and builds (scripts/setup.sh), runs the suite in
# the release build, a short libFuzzer smoke run of every fuzz target
# (scripts/fuzz.sh --smoke, clang build in build-fuzz/; about 3 minutes on 2
# cores), then the suite again in an AddressSanitizer + UndefinedBehaviorSanitizer
# build (build-asan/). Exits non-zero if anything fails.
#   scripts/test.sh             everything
#   ZKFARM_NO_FUZZ=1 scripts/test.sh       without the fuzz smoke run
#   ZKFARM_NO_SANITIZE=1 scripts/test.sh   without the ASan + UBSan build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
jobs=$(nproc)

echo "== tests (release build)"
ctest --test-dir "$root/build" --output-on-failure -j"$jobs"

if [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
  echo "== fuzz smoke (libFuzzer, build-fuzz/; docs/fuzzing.md)"
  "$root/scripts/fuzz.sh" --smoke
fi

if [ -z "${ZKFARM_NO_SANITIZE:-}" ]; then
  echo "== tests (ASan + UBSan build)"
  # CUDA off: nvcc does not take the sanitizer flags, and the CUDA code has its
  # own checks on a GPU (scripts/gpu-check.sh); its host-emulated steps run here too.
  cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZKFARM_SANITIZE=ON -DZKFARM_CUDA=OFF >/dev/null
  cmake --build "$root/build-asan" -j"$jobs"
  # install_package builds and installs the Debian package: the release run's
  # business (a package of sanitizer binaries is not one anybody installs).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs" -E '^install_package$'
fi
