#!/usr/bin/env bash
# Builds and runs zkfarm's libFuzzer targets (fuzz/, docs/fuzzing.md).
#
#   scripts/fuzz.sh [OPTIONS] [TARGET|all] [SECONDS]
#
#   TARGET       one target (e.g. protocol_decode_fuzz; `scripts/fuzz.sh --list`) or all (default)
#   SECONDS      run time per target (default 60)
#   --smoke      CI: every target for ZKFARM_FUZZ_SMOKE_SECONDS (default 10) s, two at a
#                time on 2+ cores; exits 1 on any crash, hang, leak or sanitizer report
#   --merge      afterwards, merge the inputs that add coverage into fuzz/corpus/TARGET
#                (libFuzzer -merge=1); commit them if they are small
#   --jobs N     N fuzzing processes per target at once (libFuzzer -jobs=N -workers=N),
#                each for SECONDS; logs in BUILD/fuzz-logs/TARGET/
#   --parallel N run N targets at once (default 1); cores used = N x jobs
#   --build-dir DIR   build dir (default build-fuzz)
#   --no-build   use the targets already in the build dir (a prebuilt build-fuzz)
#   --build-only build the targets and stop (scripts/test.sh builds them beside the release suite)
#   --list       print the targets and exit
#   -- ARGS      extra libFuzzer flags for every run (e.g. -- -max_len=1000000)
#
# The working corpus of TARGET is BUILD/corpus/TARGET (new inputs land there);
# fuzz/corpus/TARGET, the checked-in seeds and regression inputs, is read and
# only written by --merge. Crashes, hangs and leaks are saved as
# BUILD/crashes/TARGET-crash-HASH (and -timeout-, -leak-, -oom-); reproduce with
#   BUILD/fuzz/TARGET BUILD/crashes/TARGET-crash-HASH
# fuzz/TARGET.dict (dictionary) and fuzz/TARGET.options (libFuzzer flags, one
# per line, e.g. -max_len=65536) are used when present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

build="$root/build-fuzz"
target=all
seconds=60
smoke=0
merge=0
jobs=1
parallel=1
do_build=1
build_only=0
list=0
extra=()
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --merge) merge=1 ;;
    --jobs|--workers) jobs="$2"; shift ;;
    --jobs=*|--workers=*) jobs="${1#*=}" ;;
    --parallel) parallel="$2"; shift ;;
    --parallel=*) parallel="${1#*=}" ;;
    --build-dir) build=$(realpath -m "$2"); shift ;;
    --build-dir=*) build=$(realpath -m "${1#*=}") ;;
    --no-build) do_build=0 ;;
    --build-only) build_only=1 ;;
    --list) list=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) positional+=("$1") ;;
  esac
  shift
done
[ ${#positional[@]} -ge 1 ] && target="${positional[0]}"
[ ${#positional[@]} -ge 2 ] && seconds="${positional[1]}"
[ ${#positional[@]} -ge 3 ] && { echo "fuzz.sh: too many arguments (see --help)" >&2; exit 2; }
if [ "$smoke" = 1 ]; then
  seconds="${ZKFARM_FUZZ_SMOKE_SECONDS:-10}"
  target=all
  parallel=$(( $(nproc) >= 2 ? 2 : 1 ))
fi
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
case "$jobs" in ''|*[!0-9]*|0) echo "fuzz.sh: --jobs needs a positive number, got '$jobs'" >&2; exit 2 ;; esac
case "$parallel" in ''|*[!0-9]*|0) echo "fuzz.sh: --parallel needs a positive number, got '$parallel'" >&2; exit 2 ;; esac

if [ "$do_build" = 1 ]; then
  command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  echo "== fuzz: building $build"
  # OSS-Fuzz's flags: -O1 and line tables only (the reports need lines, not
  # variables); -O2 -g took 25 % longer to build (296 s against 234 s).
  cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DZKFARM_FUZZ=ON -DZKFARM_TESTS=OFF -DZKFARM_CUDA=OFF -DZKFARM_SANITIZE=OFF "${launcher[@]}" >/dev/null
  # Only the fuzz targets and the libraries they link, not the whole project.
  cmake --build "$build" -j"$(nproc)" --target zkfarm_fuzz
fi
[ "$build_only" = 1 ] && exit 0
[ -d "$build/fuzz" ] || { echo "fuzz.sh: no targets in $build/fuzz (build first, without --no-build)" >&2; exit 2; }

mapfile -t available < <(find "$build/fuzz" -maxdepth 1 -type f -name '*_fuzz' -perm -u+x -printf '%f\n' | sort)
if [ "$list" = 1 ]; then printf '%s\n' "${available[@]}"; exit 0; fi
[ ${#available[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets built in $build/fuzz" >&2; exit 2; }
if [ "$target" = all ]; then
  targets=("${available[@]}")
else
  [ -x "$build/fuzz/$target" ] || { echo "fuzz.sh: no target $target in $build/fuzz (have: ${available[*]})" >&2; exit 2; }
  targets=("$target")
fi

mkdir -p "$build/crashes" "$build/fuzz-logs"

# Runs target $1 for $seconds; its output goes to BUILD/fuzz-logs/$1/run.log,
# its exit status to BUILD/fuzz-logs/$1/status.
run_target() {
  local t="$1"
  local bin="$build/fuzz/$t" work="$build/corpus/$t" seeds="$root/fuzz/corpus/$t" logs="$build/fuzz-logs/$t"
  mkdir -p "$work" "$logs"
  rm -f "$logs"/fuzz-*.log
  local flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
               -artifact_prefix="$build/crashes/$t-")
  [ -f "$root/fuzz/$t.dict" ] && flags+=(-dict="$root/fuzz/$t.dict")
  if [ -f "$root/fuzz/$t.options" ]; then
    local opt
    while read -r opt; do
      case "$opt" in ''|'#'*) ;; *) flags+=("$opt") ;; esac
    done < "$root/fuzz/$t.options"
  fi
  [ "$jobs" -gt 1 ] && flags+=(-jobs="$jobs" -workers="$jobs")
  local dirs=("$work")
  [ -d "$seeds" ] && dirs+=("$seeds")
  local status=0
  # -jobs writes fuzz-N.log into the working directory: run from the log dir.
  (cd "$logs" && ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
     UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
     "$bin" "${flags[@]}" "${extra[@]}" "${dirs[@]}" > "$logs/run.log" 2>&1) || status=$?
  if [ "$jobs" -gt 1 ]; then
    cat "$logs"/fuzz-*.log >> "$logs/run.log" 2>/dev/null || true
  fi
  if [ "$status" -eq 0 ] && [ "$merge" = 1 ] && [ -d "$seeds" ]; then
    (cd "$logs" && "$bin" -merge=1 "${extra[@]}" "$seeds" "$work" > "$logs/merge.log" 2>&1) || status=$?
  fi
  echo "$status" > "$logs/status"
}

# Up to $parallel targets at once (--smoke: one per core, at most 2).
pending=()
for t in "${targets[@]}"; do
  echo "== fuzz: $t for ${seconds}s (jobs $jobs)"
  [ "$merge" = 1 ] && find "$root/fuzz/corpus/$t" -type f 2>/dev/null | wc -l > "$build/fuzz-logs/$t.before" 2>/dev/null || true
  run_target "$t" &
  pending+=($!)
  if [ ${#pending[@]} -ge "$parallel" ]; then
    wait "${pending[0]}" || true
    pending=("${pending[@]:1}")
  fi
done
wait || true

failed=()
for t in "${targets[@]}"; do
  logs="$build/fuzz-logs/$t"
  status=$(cat "$logs/status" 2>/dev/null || echo 1)
  echo "-- $t: $(grep -E '^stat::number_of_executed_units' "$logs/run.log" | tail -n 1 | sed 's/.*: *//') runs, exit $status"
  if [ "$status" -ne 0 ]; then
    echo "!! fuzz: $t failed (exit $status); log $logs/run.log" >&2
    grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written|oracle failed' "$logs/run.log" | head -n 20 >&2 || true
    failed+=("$t")
  elif [ "$merge" = 1 ] && [ -f "$build/fuzz-logs/$t.before" ]; then
    echo "   merged $(( $(find "$root/fuzz/corpus/$t" -type f | wc -l) - $(cat "$build/fuzz-logs/$t.before") )) new inputs into fuzz/corpus/$t"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "!! fuzz: failed: ${failed[*]}; inputs in $build/crashes/" >&2
  exit 1
fi
echo "== fuzz: ${#targets[@]} target(s) ran clean"
