#!/usr/bin/env bash
# How the GPU MSM spreads a small MSM's work over the device (issue 47): the
# prove step of test keys at each setting of device_msm_impl.cuh's MsmTuning,
# with the ratio to the split before 2026-12-07 (the baseline, first row) in
# the same run. On a machine with an NVIDIA GPU:
#   bench/msm-split.sh [OUT] [LOG...]      (default build/msm-split, logs 15 and 20)
# Settings (environment of zkfarm-bench-gpu, read once a process):
#   ZKFARM_MSM_L1_THREADS      level-1 chunks shrink 32 → 8 until this many threads
#   ZKFARM_MSM_REDUCE_THREADS  reduction segments shrink 32 → 1 until this many threads
#   ZKFARM_MSM_NEXT_CHUNK      partial sums a thread at later levels
# The baseline, L1=1 REDUCE=1 NEXT=16, is the split every MSM had before.
# Every row's proof is compared byte for byte with the CPU backend's
# (zkfarm-bench-gpu prove); a row whose proofs differ fails the script.
# SETTINGS="A;B;…" (the first is the ratios' baseline) and CURVES="bn128 …"
# narrow a run; REPS steps a row (default 20). Binaries: $ZKFARM_BIN or build/bin.
set -euo pipefail
export LC_ALL=C  # printf's decimal point
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build/msm-split}" && cd "${1:-$root/build/msm-split}" && pwd)
shift || true
logs=("$@")
[ ${#logs[@]} -gt 0 ] || logs=(15 20)
bin=${ZKFARM_BIN:-$root/build/bin}
settings=(
  "L1=1 REDUCE=1 NEXT=16"          # the baseline: the split before 2026-12-07
  "default"                        # MsmTuning's defaults (L1=131072 REDUCE=8192 NEXT=8)
  "L1=1 REDUCE=8192 NEXT=16"       # the reduction's split alone
  "L1=65536 REDUCE=1 NEXT=16"      # level 1's alone
  "L1=65536 REDUCE=8192 NEXT=16"
  "L1=65536 REDUCE=8192 NEXT=4"
  "L1=65536 REDUCE=8192 NEXT=8"
  "L1=65536 REDUCE=32768 NEXT=8"
)
# SETTINGS="A;B;…" and CURVES="bn128 …" narrow a run (the first setting is the baseline).
[ -z "${SETTINGS:-}" ] || IFS=';' read -r -a settings <<<"$SETTINGS"
read -r -a curves <<<"${CURVES:-bn128 bls12381}"
step_ms() {  # KEY WTNS SETTING → the GPU column of zkfarm-bench-gpu prove
  local key=$1 wtns=$2 setting=$3 env=()
  if [ "$setting" != default ]; then
    for kv in $setting; do
      case ${kv%%=*} in
        L1) env+=("ZKFARM_MSM_L1_THREADS=${kv#*=}") ;;
        REDUCE) env+=("ZKFARM_MSM_REDUCE_THREADS=${kv#*=}") ;;
        NEXT) env+=("ZKFARM_MSM_NEXT_CHUNK=${kv#*=}") ;;
      esac
    done
  fi
  local line
  # Settings from the caller's environment would leak into "default".
  line=$(env -u ZKFARM_MSM_L1_THREADS -u ZKFARM_MSM_REDUCE_THREADS -u ZKFARM_MSM_NEXT_CHUNK "${env[@]}" "$bin/zkfarm-bench-gpu" prove "$key" "$wtns" --reps "${REPS:-20}")
  echo "$line" >>"$out/rows.md"
  case $line in *"identical proofs"*) ;; *) echo "msm-split: $setting: $line" >&2; return 1 ;; esac
  echo "$line" | awk -F'|' '{gsub(/ ms/, "", $3); print $3 + 0}'
}
: >"$out/rows.md"
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo unknown); $(date -u +%Y-%m-%d)" | tee "$out/split.md"
for curve in "${curves[@]}"; do
  for log in "${logs[@]}"; do
    key=$out/$curve-$log
    [ -f "$key.zkey" ] || "$bin/zkfarm-testkey" --curve "$curve" --constraints $(( (1 << log) - 64 )) --public 2 \
      --seed "$log" --out "$key" >/dev/null
    base=""
    for s in "${settings[@]}"; do
      ms=$(step_ms "$key.zkey" "$key.wtns" "$s")
      [ -n "$base" ] || base=$ms
      printf '| %s 2^%s | %-30s | %8.2f ms | %5.2fx |\n' "$curve" "$log" "$s" "$ms" \
        "$(awk -v b="$base" -v m="$ms" 'BEGIN { print b / m }')" | tee -a "$out/split.md"
    done
  done
done
