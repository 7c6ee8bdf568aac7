#!/usr/bin/env bash
# Runs zkfarm's tests (the README's test command; CI runs it on a clean clone):
#
#   1. setup: Debian's packages, users, npm (scripts/setup.sh, no build);
#   2. the release build (build/) and its suite (ctest);
#   3. the suite again in an AddressSanitizer + UndefinedBehaviorSanitizer
#      build (build-asan/), without the tests named in sanitizer_skip below;
#   4. a short libFuzzer smoke run of every fuzz target (scripts/fuzz.sh
#      --smoke, clang build in build-fuzz/).
#
# Builds overlap suites at nice 19, taking only the CPU a suite leaves idle
# (the farms' tests mostly wait on processes and sockets): the sanitizer
# build beside the release suite, then the fuzz build and its smoke run
# beside the sanitizer suite. It ends with a table: each phase's seconds and
# how busy both cores were, the slowest tests of each suite and every failed
# test's output (scripts/test_report.py; the files behind it in
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
# cpu_mark prints "busy total" (jiffies of every core, /proc/stat); cpu_busy
# MARK: the busy share since MARK, as "cpu NN %".
cpu_mark() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat; }
cpu_busy() {
  local b0 t0 b1 t1
  read -r b0 t0 <<< "$1"
  read -r b1 t1 <<< "$(cpu_mark)"
  [ "$t1" -gt "$t0" ] && echo "cpu $(( 100 * (b1 - b0) / (t1 - t0) )) %" || echo "cpu ?"
}

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
t=$EPOCHREALTIME c=$(cpu_mark)
# The CUDA kernels for one architecture, as PTX (no GPU here to run them: they
# are compiled to be checked); the package and scripts/gpu-pack.sh build the
# full list (ZKFARM_CUDA_ARCHS' default; debian/rules and gpu-pack.sh check it).
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DZKFARM_TESTS=ON -DZKFARM_CUDA=ON \
  -DZKFARM_CUDA_ARCHS=90-virtual >/dev/null
cmake --build "$root/build" -j"$cores"
phase "release configure and build" "$(since "$t")" "$(cpu_busy "$c")"

# background_build NAME COMMAND...: at nice 19; its log, exit status and
# seconds go into the report folder.
background_build() {
  local name=$1; shift
  local t0=$EPOCHREALTIME status=0
  nice -n 19 "$@" > "$report/$name.log" 2>&1 || status=$?
  echo "$status" > "$report/$name.status"
  since "$t0" > "$report/$name.seconds"
}
# wait_background NAME NOTE: waits for the background job, adds the build's
# row and the wait's, and stops the run when the build failed (a suite
# cannot run without it).
wait_background() {
  local name=$1 note=$2 t0=$EPOCHREALTIME
  if [ ${#background[@]} -gt 0 ]; then
    echo "== waiting for the $name (nice 19, $note)"
    wait "${background[0]}" || true
    background=()
  fi
  local waited
  waited=$(since "$t0")
  [ -f "$report/$name.status" ] || return 0
  phase "$name" "$(cat "$report/$name.seconds")" "nice 19, $note"
  phase "waiting for the $name" "$waited" "after the suite beside it ended"
  if [ "$(cat "$report/$name.status")" != 0 ]; then
    echo "!! $name failed; the end of $report/$name.log:" >&2
    tail -n 60 "$report/$name.log" >&2
    exit 1
  fi
}

# The sanitizer build beside the release suite. CUDA off: nvcc does not take
# the sanitizer flags, and the CUDA code has its own checks on a GPU
# (scripts/gpu-check.sh); its host-emulated steps run here too. No benches:
# they only measure. The build type's flags come from CMakeLists.txt.
if [ -z "${ZKFARM_NO_SANITIZE:-}" ]; then
  background_build "sanitizer build" bash -c \
    "cmake -S '$root' -B '$root/build-asan' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZKFARM_SANITIZE=ON \
       -DZKFARM_CUDA=OFF -DZKFARM_BENCH=OFF >/dev/null && cmake --build '$root/build-asan' -j$cores" &
  background+=($!)
fi

echo "== tests (release build, ctest -j$test_jobs)"
t=$EPOCHREALTIME c=$(cpu_mark)
# A failing release suite does not stop the run: the sanitizer suite still
# runs, so one run names every failure (the exit status says it failed).
failed=()
ctest --test-dir "$root/build" --output-on-failure -j"$test_jobs" --output-junit "$report/release.xml" ||
  failed+=("release tests")
phase "release tests" "$(since "$t")" "$(cpu_busy "$c"), the sanitizer build beside it"
wait_background "sanitizer build" "beside the release tests"

# The fuzz build and its smoke run (fixed seconds a target: fewer runs when
# the cores are busy, the same wall time) beside the sanitizer suite.
if [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
  background_build "fuzz build and smoke" bash -c \
    "'$root/scripts/fuzz.sh' --build-only && '$root/scripts/fuzz.sh' --smoke --no-build" &
  background+=($!)
fi

if [ -z "${ZKFARM_NO_SANITIZE:-}" ]; then
  echo "== tests (ASan + UBSan build, ctest -j$test_jobs; not: $sanitizer_skip)"
  t=$EPOCHREALTIME c=$(cpu_mark)
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j"$test_jobs" -E "$sanitizer_skip" \
      --output-junit "$report/sanitizer.xml" || failed+=("sanitizer tests")
  phase "sanitizer tests" "$(since "$t")" "$(cpu_busy "$c"), the fuzz build and smoke beside it"
fi
if [ -z "${ZKFARM_NO_FUZZ:-}" ]; then
  # A crash the smoke run found fails the run here (wait_background shows its log's end).
  wait_background "fuzz build and smoke" "beside the sanitizer tests"
  grep -E '^(-- |== fuzz: [0-9])' "$report/fuzz build and smoke.log" || true
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "!! failed: ${failed[*]} (their ctest output above)" >&2
  exit 1
fi
