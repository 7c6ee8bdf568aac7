#!/usr/bin/env bash
# Runs zkfarm's tests (the README's test command; CI runs it on a clean clone):
#
#   1. setup: Debian's packages, users, npm (scripts/setup.sh, no build);
#   2. the release build (build/) and its suite (ctest);
#   3. a short libFuzzer smoke run of every fuzz target (scripts/fuzz.sh
#      --smoke, clang build in build-fuzz/);
#   4. the suite again in an AddressSanitizer + UndefinedBehaviorSanitizer
#      build (build-asan/), without the tests named in sanitizer_skip below.
#
# The sanitizer and fuzz builds compile at nice 19 beside the release suite
# (whose farms mostly wait on processes and sockets): they take only the CPU
# the suite leaves idle. It ends with a table: each phase's seconds and the
# slowest tests of each suite (scripts/test_report.py; the files behind it in
# build/test-report/). Exits non-zero if anything fails; the table is printed
# either way.
#
#   scripts/test.sh                         everything
#   ZKFARM_NO_FUZZ=1 scripts/test.sh        without the fuzz smoke run
#   ZKFARM_NO_SANITIZE=1 scripts/test.sh    without the ASan + UBSan build
#   ZKFARM_TEST_JOBS=N scripts/test.sh      ctest's parallel level (default: 2 per core;
#                                           the farms' tests mostly wait, and each
#                                           test's PROCESSORS keeps the busy ones apart)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cores=$(nproc)
test_jobs=${ZKFARM_TEST_JOBS:-$((2 * cores))}
report="$root/build/test-report"

# Left to the release run, and why (the rest, every gtest case and every
# end-to-end test that feeds hostile or broken input, runs under the sanitizers):
#   install_package  builds and lints the Debian package: a package of
#                    sanitizer binaries is not one anybody installs;
#   monitoring       promtool and lint checks of docs/monitoring/ against a
#                    live scrape: checks of text, no hostile input;
#   testkey_snarkjs  zkfarm-testkey's files read by snarkjs: a test-key
#                    generator on its own valid arguments, no hostile input.
sanitizer_skip='^(install_package|monitoring|testkey_snarkjs\..*)$'

mkdir -p "$root/build"
rm -rf "$report"
mkdir -p "$report"
t_start=$EPOCHREALTIME
background=()

# phase NAME SECONDS [NOTE]: one row of the table.
phase() { printf '%s\t%.1f\t%s\n' "$1" "$2" "${3:-}" >> "$report/phases.tsv"; }
since() { echo "$EPOCHREALTIME - $1" | bc; }

kill_tree() {  # PID and every process below it (a failed run leaves no compiler behind)
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

finish() {
  local status=$?
  for pid in "${background[@]}"; do kill_tree "$pid"; done
  since "$t_start" > "$report/total"
  echo
  python3 "$root/scripts/test_report.py" "$report" || true
  [ "$status" -eq 0 ] || echo "!! scripts/test.sh failed (exit $status)" >&2
  exit "$status"
}
trap finish EXIT

t=$EPOCHREALTIME
ZKFARM_BUILD=none "$root/scripts/setup.sh"
phase "setup (packages, users, npm)" "$(since "$t")"

echo "== release build (build/)"
t=$EPOCHREALTIME
# The CUDA kernels for one architecture, as PTX (no GPU here to run them: they
# are compiled to be checked); the package and scripts/gpu-pack.sh build the
# full list (ZKFARM_CUDA_ARCHS' default; debian/rules and gpu-pack.sh check it).
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DZKFARM_TESTS=ON -DZKFARM_CUDA=ON \
  -DZKFARM_CUDA_ARCHS=90-virtual >/dev/null
cmake --build "$root/build" -j"$cores"
phase "release configure and build" "$(since "$t")"

# The sanitizer and fuzz builds, at nice 19 while the release suite runs. Each
# writes its log, its exit status and its seconds into the report folder.
background_build() {  # NAME COMMAND...
  local name=$1; shift
  local t0=$EPOCHREALTIME status=0
  nice -n 19 "$@" > "$report/$name.log" 2>&1 || status=$?
  echo "$status" > "$report/$name.status"
  since "$t0" > "$report/$name.seconds"
}
if [ -z "${ZKFARM_NO_SANITIZE:-}" ] || [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
  (
    set +e
    if [ -z "${ZKFARM_NO_SANITIZE:-}" ]; then
      # CUDA off: nvcc does not take the sanitizer flags, and the CUDA code has its
      # own checks on a GPU (scripts/gpu-check.sh); its host-emulated steps run here too.
      # No benches: they only measure. The build type's flags come from CMakeLists.txt.
      background_build sanitizer-build bash -c \
        "cmake -S '$root' -B '$root/build-asan' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZKFARM_SANITIZE=ON \
           -DZKFARM_CUDA=OFF -DZKFARM_BENCH=OFF >/dev/null && cmake --build '$root/build-asan' -j$cores"
    fi
    if [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
      background_build fuzz-build "$root/scripts/fuzz.sh" --build-only
    fi
  ) &
  background+=($!)
fi

echo "== tests (release build, ctest -j$test_jobs)"
t=$EPOCHREALTIME
# A failing release suite does not stop the run: the sanitizer suite still
# runs, so one run names every failure (the exit status says it failed).
failed=()
ctest --test-dir "$root/build" --output-on-failure -j"$test_jobs" --output-junit "$report/release.xml" ||
  failed+=("release tests")
phase "release tests" "$(since "$t")"

# wait_background NAME TITLE: the build's row, after the release suite is done.
t_suite_end=$EPOCHREALTIME
if [ ${#background[@]} -gt 0 ]; then
  echo "== waiting for the sanitizer and fuzz builds (nice 19, beside the release tests)"
  wait "${background[0]}"
  background=()
fi
overlap_wait=$(since "$t_suite_end")
for name in sanitizer-build fuzz-build; do
  [ -f "$report/$name.status" ] || continue
  if [ "$(cat "$report/$name.status")" != 0 ]; then
    echo "!! $name failed; the end of $report/$name.log:" >&2
    tail -n 60 "$report/$name.log" >&2
    exit 1
  fi
done
[ -f "$report/sanitizer-build.seconds" ] &&
  phase "sanitizer configure and build" "$(cat "$report/sanitizer-build.seconds")" "nice 19, beside the release tests"
[ -f "$report/fuzz-build.seconds" ] &&
  phase "fuzz build" "$(cat "$report/fuzz-build.seconds")" "nice 19, after the sanitizer build"
phase "waiting for those builds" "$overlap_wait" "after the release tests ended"

if [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
  echo "== fuzz smoke (libFuzzer, build-fuzz/; docs/fuzzing.md)"
  t=$EPOCHREALTIME
  "$root/scripts/fuzz.sh" --smoke --no-build || failed+=("fuzz smoke")
  phase "fuzz smoke" "$(since "$t")"
fi

if [ -z "${ZKFARM_NO_SANITIZE:-}" ]; then
  echo "== tests (ASan + UBSan build, ctest -j$test_jobs; not: $sanitizer_skip)"
  t=$EPOCHREALTIME
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$test_jobs" -E "$sanitizer_skip" \
      --output-junit "$report/sanitizer.xml" || failed+=("sanitizer tests")
  phase "sanitizer tests" "$(since "$t")"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "!! failed: ${failed[*]} (their ctest output above)" >&2
  exit 1
fi
